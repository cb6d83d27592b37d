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

// Where a step's setup time goes, phase by phase: for the log and the metrics, and the
// phase under way names where a failure happened.
class StepManager::PhaseClock {
 public:
  using Clock = std::chrono::steady_clock;
  // The phase under way ends, phase starts now.
  void begin(const char* phase) {
    end();
    phase_ = phase;
  }
  // The phase under way ends (none is after).
  void end() {
    auto now = Clock::now();
    if (*phase_) laps_.emplace_back(phase_, std::chrono::duration<double>(now - last_).count());
    last_ = now;
    phase_ = "";
  }
  const char* phase() const { return phase_; }
  const std::vector<std::pair<const char*, double>>& laps() const { return laps_; }
  double seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  // "paths 6, devices 0, image 2, ..." in ms.
  std::string text() const {
    std::string out;
    for (const auto& [phase, s] : laps_)
      out += (out.empty() ? "" : ", ") + std::string(phase) + " " + std::to_string(static_cast<int64_t>(s * 1000));
    return out;
  }

 private:
  Clock::time_point start_ = Clock::now(), last_ = start_;
  const char* phase_ = "";
  std::vector<std::pair<const char*, double>> laps_;
};

}  // namespace crisp
