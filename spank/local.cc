// srun, sbatch and salloc: validate everything before the job is submitted.
#include <cstdlib>

#include "spank/contexts.h"
#include "spank/seam.h"

namespace crisp {

PluginState& plugin_state() {
  static PluginState s;
  return s;
}

// Refused before anything is submitted: srun, sbatch or salloc ends here with crisp's line
// alone (an error returned, Slurm would add "spank: required plugin ... failed" and "Plugin
// stack post-option processing failed").
[[noreturn]] void refuse(const std::string& message) {
  seam::user_error(message);
  seam::exit_command(1);
}

int local_init_post_opt(spank_t) {
  PluginState& ps = plugin_state();
  auto from_env = [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (!v) return std::nullopt;
    return std::string(v);
  };
  if (auto s = apply_environment(ps.raw, from_env); !s) refuse(s.error());
  auto opts = validate_options(ps.raw, ps.config);
  if (!opts) refuse(opts.error());
  for (const std::string& w : opts->warnings) seam::user_error(w);
  return 0;
}

}  // namespace crisp
