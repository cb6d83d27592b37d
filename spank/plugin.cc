// spank_crisp.so's entry points: the option table, plugstack arguments and
// the dispatch of each callback to the code of its context (through the seam:
// no SPANK calls here).
#include "spank/slurm_spank.h"

#include <string>
#include <vector>

#include "spank/contexts.h"
#include "spank/seam.h"

extern "C" {
// Slurm reads the plugin's identity through these symbols.
__attribute__((visibility("default"))) extern const char plugin_name[];
__attribute__((visibility("default"))) extern const char plugin_type[];
__attribute__((visibility("default"))) extern const unsigned int plugin_version;
__attribute__((visibility("default"))) extern const unsigned int spank_plugin_version;
SPANK_PLUGIN(crisp, 1)
}

namespace {

int on_option(int val, const char* optarg, int remote);

// Built from option_defs(): val is the index of the option there.
std::vector<spank_option>& option_table() {
  static std::vector<spank_option> opts = [] {
    std::vector<spank_option> out;
    const auto& defs = crisp::option_defs();
    for (size_t i = 0; i < defs.size(); ++i)
      out.push_back({const_cast<char*>(defs[i].name), const_cast<char*>(defs[i].arginfo),
                     const_cast<char*>(defs[i].usage), defs[i].arginfo ? 1 : 0, static_cast<int>(i), on_option});
    return out;
  }();
  return opts;
}

int on_option(int val, const char* optarg, int /*remote*/) {
  const crisp::OptionDef& d = crisp::option_defs().at(static_cast<size_t>(val));
  std::string value = crisp::option_value(d, optarg ? optarg : "");
  if (auto s = crisp::validate_option(d.key, value); !s) {
    // In srun, sbatch or salloc, before anything is submitted (slurmstepd parses them again,
    // already checked: there a failure is returned).
    if (crisp::seam::context() != S_CTX_REMOTE) crisp::refuse(s.error());
    crisp::seam::user_error(s.error());
    return -1;
  }
  crisp::plugin_state().raw.values[d.key] = value;
  return 0;
}

// plugstack.conf arguments reach every callback; the job-script context
// (prolog/epilog) calls no slurm_spank_init, so each entry point that needs
// them reads them.
bool load_config(int ac, char** av) {
  auto cfg = crisp::parse_plugin_args(std::vector<std::string>(av, av + ac));
  if (!cfg) {
    crisp::seam::daemon_log(cfg.error());
    crisp::seam::user_error(cfg.error());
    return false;
  }
  crisp::plugin_state().config = *cfg;
  return true;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int slurm_spank_init(spank_t sp, int ac, char** av) {
  if (!load_config(ac, av)) return -1;
  spank_context_t ctx = crisp::seam::context();
  // sbatch_support=0 leaves sbatch and salloc without the options, as in Pyxis.
  bool allocator = ctx == S_CTX_ALLOCATOR && crisp::plugin_state().config.sbatch_support;
  if (ctx == S_CTX_LOCAL || ctx == S_CTX_REMOTE || allocator)
    if (auto s = crisp::seam::register_options(sp, option_table()); !s) {
      crisp::seam::user_error(s.error());
      return -1;
    }
  return 0;
}

__attribute__((visibility("default"))) int slurm_spank_init_post_opt(spank_t sp, int, char**) {
  switch (crisp::seam::context()) {
    case S_CTX_LOCAL:
    case S_CTX_ALLOCATOR: return crisp::local_init_post_opt(sp);
    case S_CTX_REMOTE: return crisp::remote_init_post_opt(sp);
    default: return 0;
  }
}

__attribute__((visibility("default"))) int slurm_spank_user_init(spank_t sp, int, char**) {
  return crisp::seam::remote(sp) ? crisp::remote_user_init(sp) : 0;
}

__attribute__((visibility("default"))) int slurm_spank_task_init_privileged(spank_t sp, int, char**) {
  return crisp::seam::remote(sp) ? crisp::remote_task_init_privileged(sp) : 0;
}

__attribute__((visibility("default"))) int slurm_spank_task_init(spank_t sp, int, char**) {
  return crisp::seam::remote(sp) ? crisp::remote_task_init(sp) : 0;
}

__attribute__((visibility("default"))) int slurm_spank_task_post_fork(spank_t sp, int, char**) {
  return crisp::seam::remote(sp) ? crisp::remote_task_post_fork(sp) : 0;
}

__attribute__((visibility("default"))) int slurm_spank_task_exit(spank_t sp, int, char**) {
  return crisp::seam::remote(sp) ? crisp::remote_task_exit(sp) : 0;
}

__attribute__((visibility("default"))) int slurm_spank_exit(spank_t sp, int, char**) {
  return crisp::seam::remote(sp) ? crisp::remote_exit(sp) : 0;
}

__attribute__((visibility("default"))) int slurm_spank_job_prolog(spank_t sp, int ac, char** av) {
  return load_config(ac, av) ? crisp::slurmd_job_prolog(sp, option_table()) : 0;
}

__attribute__((visibility("default"))) int slurm_spank_job_epilog(spank_t sp, int ac, char** av) {
  // A failed epilog drains the node; a bad plugstack line already fails every
  // srun, and the sweep removes what this epilog cannot release.
  return load_config(ac, av) ? crisp::slurmd_job_epilog(sp) : 0;
}

}  // extern "C"
