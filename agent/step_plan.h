// What StepManager::create builds up, phase by phase, and where its time goes:
// shared by step_create.cc and step_spares.cc only.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "agent/devices/cdi.h"
#include "agent/host/user_access.h"
#include "agent/step_manager.h"
#include "common/image_ref.h"

namespace crisp {

struct StepManager::Plan {
  JobIdentity scope;
  bool named = false;
  ImageRef ref;
  UserCreds creds;
  std::optional<std::string> home;  // from the password database, looked up once
  StepContainerInput in;
  v1::CreateStepResponse out;
  std::vector<CdiHook> hooks;
  std::vector<std::string> gpu_bdfs;
  bool driver_mounted = false;
  RdmaPlan rdma;
  size_t tmpfs_count = 0;
  Fd image_root;  // a squashfs image, mounted (squashfs_mount.h); the overlay takes it over
  Fd image_to_extract;  // or one the kernel must not read, extracted as the user (squashfs_tools.h)
  std::vector<std::string> file_entrypoint;  // its /etc/rc's, to run once it is the root (--container-entrypoint)
  // Resolved by the user now, staged under the container's mount root by prepare_host.
  std::vector<std::pair<UserPath, v1::BindMount>> user_mounts;
  std::optional<UserPath> workdir;
  const PullWaiter* waiter = nullptr;  // the request's: told of a pull's progress, asked whether to go on
  std::string key;  // names what the step makes on the host: JOB.STEP, or JOB.UID.NAME
  int pid = 0;      // the holder's
  std::string container_id;
  std::string image_id;       // what the image reference named (a spare of another is stale)
  bool rootfs_given = false;  // give_rootfs made the root the user's
  bool claimed = false;       // the container is a spare the step claimed
};

// Milliseconds each phase of a step's setup took, for the log: where launch time goes.
class StepManager::PhaseClock {
 public:
  void lap(const char* phase) {
    auto now = std::chrono::steady_clock::now();
    text_ += (text_.empty() ? "" : ", ") + std::string(phase) + " " + std::to_string(ms(last_, now));
    last_ = now;
  }
  const std::string& text() const { return text_; }
  int64_t total_ms() const { return ms(start_, std::chrono::steady_clock::now()); }

 private:
  static int64_t ms(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(b - a).count();
  }
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now(), last_ = start_;
  std::string text_;
};

}  // namespace crisp
