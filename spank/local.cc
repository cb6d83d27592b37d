// srun, sbatch and salloc: validate everything before the job is submitted.
#include "spank/contexts.h"
#include "spank/seam.h"

namespace crisp {

PluginState& plugin_state() {
  static PluginState s;
  return s;
}

int local_init_post_opt(spank_t) {
  auto opts = validate_options(plugin_state().raw);
  if (!opts) {
    seam::user_error(opts.error());
    return -1;
  }
  for (const std::string& w : opts->warnings) seam::user_error(w);
  if (opts->active && spank_context() == S_CTX_ALLOCATOR) {
    seam::user_error("--container-image is not supported on sbatch or salloc yet: put it on the srun lines of the job");
    return -1;
  }
  return 0;
}

}  // namespace crisp
