// NodeUnits: every unit of crispd's, made in dependency order (each member uses only those
// above it) from the node's configuration and the seams the fake CRI's tests replace. The
// arrows, top to bottom:
//   StepCreator -> NamedContainers, SpareContainers, StepImage, StepDevices, StepHost, StepSite, StepWork
//   SpareContainers -> ContainerStarter, Containers, UserSandboxes, Holders, SparePool, ClaimBook, StepWork
//   NamedContainers -> ContainerStarter, Containers, StepSessions
//   StepEnds -> Containers, StepSessions, JobLocks, StepWork
//   Containers -> Holders, StepSessions, UserSandboxes, ClaimBook, SparePool
//   UserSandboxes -> JobLocks
//   ImageImporter, StepImage -> ImageRequests -> ImageStore
// The server and the sweep take them by reference (served(), sweep_parts()).
#pragma once

#include <chrono>
#include <string>

#include "agent/server.h"
#include "agent/steps/container_start.h"
#include "agent/steps/containers.h"
#include "agent/steps/holders.h"
#include "agent/steps/image_importer.h"
#include "agent/steps/image_requests.h"
#include "agent/steps/job_locks.h"
#include "agent/steps/named_containers.h"
#include "agent/steps/spare_containers.h"
#include "agent/steps/step_creator.h"
#include "agent/steps/step_devices.h"
#include "agent/steps/step_ends.h"
#include "agent/steps/step_host.h"
#include "agent/steps/step_image.h"
#include "agent/steps/step_saver.h"
#include "agent/steps/step_sessions.h"
#include "agent/steps/step_work.h"
#include "agent/steps/user_sandboxes.h"
#include "agent/sweeper.h"

namespace crisp {

// crispd's flags, as the units take them.
struct NodeConfig {
  NodeSettings node;
  std::string runtime_handler;
  int64_t stop_timeout_s = 2;
  StartSettings start;   // its snapshots: containerd's snapshot service (null: none)
  HostSettings host;     // host.dirs also places the rootfs stage and imports
  DeviceRoots devices;
  HcaPolicy hca_policy = HcaPolicy::kAll;
  std::string registry_auth_file;  // the node's Docker-format credentials; empty: none
  bool squashfs_any_owner = false;  // StepImage's
  std::string sandbox_image;        // StepImage's
  SquashfsBounds squashfs;          // imports' and saves' mksquashfs
  size_t imports_per_user = 1, imports_per_node = 2;
  SpareLimits spares;               // per_node 0: none
  std::string claims_dir;           // where the claims of spares are kept; empty: in memory alone
  std::vector<SiteDir> site_dirs;   // the site's container configuration (agent/site/)
  std::chrono::milliseconds hook_timeout{60000};  // each site hook's
};

// What the fake CRI's tests replace: each is given to the unit that uses it.
struct NodeSeams {
  RootGiver give_rootfs = give_rootfs_to_user;
  ProcessEnder end_process = crisp::end_process;
  SessionStarter start_session = crisp::start_session;
  MountAttacher attach = attach_in_container;
  StepGpusQuery step_gpus;            // unset: a step that names GPUs is refused
  StepLivenessQuery step_liveness;    // unset: not asked while a pull runs
  JobPartitionQuery job_partition;    // unset: the site's partitions/ is not read
  SiteHookRunner run_hook = run_site_hook;
};

class NodeUnits {
 public:
  NodeUnits(CriClient& cri, ImageStore& store, Metrics& metrics, NodeConfig config, NodeSeams seams);
  NodeUnits(const NodeUnits&) = delete;
  NodeUnits& operator=(const NodeUnits&) = delete;

  ServedUnits served();
  SweepParts sweep_parts();

  CriClient& cri;
  ImageStore& store;
  Metrics& metrics;
  const NodeConfig config;
  JobLocks locks;
  StepWork work;
  UserSandboxes sandboxes;
  Holders holders;
  StepSessions sessions;
  SparePool pool;
  ClaimBook claims;
  Containers containers;
  ContainerStarter starter;
  ImageRequests requests;
  StepImage image;
  StepDevices devices;
  StepHost host;
  StepSite site;
  NamedContainers named;
  SpareContainers spares;
  StepCreator creator;
  StepEnds ends;
  StepSaver saver;
  ImageImporter importer;
};

}  // namespace crisp
