// spank_crisp.so's entry points: options, plugstack arguments and the
// dispatch of each callback to the code of its context.
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

enum OptionId { kImage = 1, kMounts, kWorkdir, kEnv };

int on_option(int val, const char* optarg, int remote);

struct spank_option g_options[] = {
    {const_cast<char*>("container-image"), const_cast<char*>("[USER@][REGISTRY#]IMAGE[:TAG]|REGISTRY/IMAGE[:TAG]"),
     const_cast<char*>("[crisp] the image to run the step's tasks in"), 1, kImage, on_option},
    {const_cast<char*>("container-mounts"), const_cast<char*>("SRC[:DST[:FLAGS]][,...]"),
     const_cast<char*>("[crisp] bind mounts into the container; FLAGS: ro, rw, [r]private, [r]slave, [r]shared"), 1,
     kMounts, on_option},
    {const_cast<char*>("container-workdir"), const_cast<char*>("PATH"),
     const_cast<char*>("[crisp] working directory inside the container"), 1, kWorkdir, on_option},
    {const_cast<char*>("container-env"), const_cast<char*>("NAME[,NAME...]"),
     const_cast<char*>("[crisp] job environment variables that override the image's"), 1, kEnv, on_option},
};

int on_option(int val, const char* optarg, int /*remote*/) {
  auto& raw = crisp::plugin_state().raw;
  std::optional<std::string>* slot = val == kImage    ? &raw.image
                                     : val == kMounts ? &raw.mounts
                                     : val == kWorkdir ? &raw.workdir
                                                       : &raw.env;
  const char* name = g_options[val - 1].name;
  std::string value = optarg ? optarg : "";
  if (auto s = crisp::validate_option(name, value); !s) {
    crisp::seam::user_error(s.error());
    return -1;
  }
  *slot = value;
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
  spank_context_t ctx = spank_context();
  if (ctx == S_CTX_LOCAL || ctx == S_CTX_REMOTE || ctx == S_CTX_ALLOCATOR) {
    for (auto& opt : g_options)
      if (spank_option_register(sp, &opt) != ESPANK_SUCCESS) {
        crisp::seam::user_error(std::string("cannot register --") + opt.name);
        return -1;
      }
  }
  return load_config(ac, av) ? 0 : -1;
}

__attribute__((visibility("default"))) int slurm_spank_init_post_opt(spank_t sp, int, char**) {
  switch (spank_context()) {
    case S_CTX_LOCAL:
    case S_CTX_ALLOCATOR: return crisp::local_init_post_opt(sp);
    case S_CTX_REMOTE: return crisp::remote_init_post_opt(sp);
    default: return 0;
  }
}

__attribute__((visibility("default"))) int slurm_spank_task_init_privileged(spank_t sp, int, char**) {
  return spank_remote(sp) ? crisp::remote_task_init_privileged(sp) : 0;
}

__attribute__((visibility("default"))) int slurm_spank_task_init(spank_t sp, int, char**) {
  return spank_remote(sp) ? crisp::remote_task_init(sp) : 0;
}

__attribute__((visibility("default"))) int slurm_spank_exit(spank_t sp, int, char**) {
  return spank_remote(sp) ? crisp::remote_exit(sp) : 0;
}

__attribute__((visibility("default"))) int slurm_spank_job_epilog(spank_t sp, int ac, char** av) {
  return load_config(ac, av) ? crisp::slurmd_job_epilog(sp) : -1;
}

}  // extern "C"
