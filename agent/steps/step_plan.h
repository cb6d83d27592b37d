// StepPlan: what one create builds up, phase by phase, passed from phase to phase
// (StepCreator's, ContainerStarter's, SpareContainers' claim). Calls nothing.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agent/cri/spec_builder.h"
#include "agent/devices/cdi.h"
#include "agent/devices/rdma_plan.h"
#include "agent/host/user_access.h"
#include "agent/images/pull_waiter.h"
#include "agent/site/site_files.h"
#include "agent/spares/spare_pool.h"
#include "common/image_ref.h"
#include "crisp.pb.h"

namespace crisp {

// The user's credentials as the request gives them.
UserCreds creds_of(const v1::CreateStepRequest& req);

struct StepPlan {
  // The request's scope, credentials and the container's base input.
  static StepPlan of(const v1::CreateStepRequest& req);

  JobIdentity scope;
  bool named = false;
  ImageRef ref;
  UserCreds creds;
  EnvLookup job_env;  // the job's environment, for ${NAME} in an image's files
  std::optional<std::string> home;  // from the password database, looked up once
  StepContainerInput in;
  cri::ContainerConfig config;  // built from in once it is complete, for the create, the claim and the root
  v1::CreateStepResponse out;
  std::vector<CdiHook> hooks;
  std::vector<std::string> gpu_bdfs;
  bool driver_mounted = false;
  RdmaPlan rdma;
  std::vector<v1::BindMount> tmpfs_mounts;  // the user's, the site's and the image's, made by the host phase
  Fd image_root;        // a squashfs image, mounted (squashfs_mount.h); the overlay takes it over
  Fd image_to_extract;  // or one the kernel must not read, extracted as the user (squashfs_tools.h)
  // --container-entrypoint with a file holding an /etc/rc, run once the file is the root, as enroot
  // starts a container (it sources /etc/rc.local, then execs the entrypoint): named for a failure's line.
  std::optional<std::string> file_rc;
  // While the step is made: counts towards its spare key's demand (spare_pool.h).
  std::unique_ptr<SparePool::Arrival> spare_arrival;
  // Resolved by the user now, staged under the container's mount root by the host phase.
  std::vector<std::pair<UserPath, v1::BindMount>> user_mounts;
  std::vector<v1::BindMount> pending_unmounts;  // umount: entries for the image's mounts (step_paths.h)
  std::optional<UserPath> workdir;
  const PullWaiter* waiter = nullptr;  // the request's: told of a pull's progress, asked whether to go on
  std::string key;  // names what the step makes on the host: JOB.STEP, or JOB.UID.NAME
  int pid = 0;      // the holder's
  std::string container_id;
  std::string image_id;       // what the image reference named (a spare of another is stale)
  bool rootfs_given = false;  // the root was made the user's
  bool claimed = false;       // the container is a spare the step claimed
};

}  // namespace crisp
