// Pure builders of the CRI configs for a user's sandbox and a step's holder
// container, and the parser of ImageStatus's verbose info. No I/O here.
#pragma once

#include <string>
#include <vector>

#include "agent/cri/cri_types.h"
#include "common/layout.h"
#include "common/result.h"
#include "crisp.pb.h"

namespace crisp {

// The sandboxes' CRI log directory: containers log there only when asked (the entrypoint's output).
inline constexpr const char* kLogDirectory = "/run/crisp/logs";
inline constexpr const char* kHostDevpts = "/dev/pts";

struct NodeSettings {
  std::string node_name;
  std::string holder_path;  // crisp-holder on the host
};

// job_id 0: the user's sandbox for named containers of global scope.
struct JobIdentity {
  uint32_t job_id = 0;
  uint32_t uid = 0;
  std::string user;
};

struct StepContainerInput {
  JobIdentity job;
  uint32_t step_id = 0;
  uint32_t gid = 0;
  std::vector<uint32_t> groups;
  std::string image;                   // canonical reference, or a squashfs image's path
  // A squashfs image: containerd makes the container from the sandbox's image
  // (crisp's holder alone), and the file becomes its root (user_rootfs.h); its
  // WorkingDir is labelled, its Env is the container's, for later steps.
  std::string cri_image;
  std::string image_workdir;
  std::vector<v1::BindMount> mounts;   // sources already resolved and checked
  // The job's directory, symlinks resolved, as slurmstepd enters it (srun sends
  // getcwd()); mounted at itself when non-empty, and also at workdir_alias, the
  // logical path in $PWD, when that differs.
  std::string workdir;
  std::string workdir_alias;
  std::string workdir_source;  // the host path mounted there (a staged clone)
  int32_t stepd_pid = 0;
  // Non-empty: a named container, kept across steps; its holder ignores slurmstepd.
  std::string name;
  bool readonly_rootfs = false;
  // Run before the holder, which becomes its arguments (the image's ENTRYPOINT).
  std::vector<std::string> entrypoint;
  std::vector<std::string> env;  // NAME=VALUE over the image's, for the entrypoint; a squashfs image's Env
  std::string log_path;  // under kLogDirectory, where the CRI writes its output; empty: nowhere
  // Host directories (already mounted tmpfs) and where they go.
  std::vector<std::pair<std::string, std::string>> tmpfs;
  // The container's mount root (tmpfs, staged sources): labelled so its removal follows the container's.
  std::string tmpfs_root;
  std::vector<cri::Device> devices;  // the step's GPUs and HCAs, and what they need
  std::string hca_view;              // host dir mounted over /sys/class/infiniband; empty: none
  // Non-empty: a spare's unique name (agent/spares/): of no job or step, its holder waits
  // for SIGTERM alone (crispd ends it with the step that claims it).
  std::string spare;
};

// The container's CRI name and the label that finds a named one.
std::string container_name(const StepContainerInput& in);

// One sandbox per user and node holds all of that user's containers: with
// host namespaces it isolates nothing, and RunPodSandbox per job cost more
// than the container itself (see bench/).
cri::PodSandboxConfig build_user_sandbox_config(uint32_t uid, const std::string& user, const NodeSettings& node);
cri::ContainerConfig build_step_container(const StepContainerInput& in, const NodeSettings& node);

struct ImageConfig {
  std::string id;  // the image's (ImageStatus's image.id), which a tag names now
  std::string chain_id;  // its layers' committed snapshot in containerd (verbose info's chainID)
  std::vector<std::string> env;
  std::vector<std::string> entrypoint;
  std::vector<std::string> cmd;
  std::string working_dir;
  std::vector<std::string> volumes;                           // Volumes' keys
  std::vector<std::pair<std::string, std::string>> labels;  // Labels with string values
};

// info is ImageStatusResponse.info: {"info": "<JSON with imageSpec.config>"}.
Result<ImageConfig> parse_image_info(const std::map<std::string, std::string>& info);

// containerd's sandbox image from Status(verbose).info["config"]: crisp's
// holder alone, on every node that runs crisp's sandboxes.
Result<std::string> parse_sandbox_image(const std::map<std::string, std::string>& info);

// The holder's pid from ContainerStatus(verbose).info["info"].
Result<int> parse_container_pid(const std::map<std::string, std::string>& info);

}  // namespace crisp
