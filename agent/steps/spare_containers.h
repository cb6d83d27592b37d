// SpareContainers: after a step of a user and image starts, crispd makes, in the
// background, one more container of that image for that user with nothing of any job in
// it (started, its holder up, its root the user's). The user's next new job or unnamed
// step of that image claims it: the step's mounts and devices are attached inside
// (claim_mounts.h), which takes milliseconds where runc's create and start take tens. A
// spare is claimed once, never recycled. This unit owns the maker's queue and thread, the
// claim, expiry and removal; the pool (agent/spares/) holds the spares themselves.
// Calls: containerd's CRI, SparePool, ClaimBook, Containers, UserSandboxes,
// ContainerStarter, Holders, StepWork, Metrics, and the mount attacher it is given.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "agent/cri/cri_types.h"
#include "agent/host/claim_mounts.h"
#include "agent/spares/claims.h"
#include "agent/spares/spare_pool.h"
#include "agent/steps/container_start.h"
#include "agent/steps/containers.h"
#include "agent/steps/holders.h"
#include "agent/steps/phase_clock.h"
#include "agent/steps/step_plan.h"
#include "agent/steps/step_work.h"
#include "agent/steps/user_sandboxes.h"

namespace crisp {

class Metrics;
enum class SpareEvent;

class CriClient;

// Attaches a claimed spare's mounts and devices (claim_mounts.h's attach_in_container; a
// seam for the fake CRI's tests).
using MountAttacher = std::function<Status(const AttachRequest&)>;

// Why the sweep removes a container: cause for the metrics, why for the log; none: kept.
struct RemovalCause {
  const char* cause = nullptr;
  const char* why = nullptr;
  explicit operator bool() const { return cause != nullptr; }
};

// The units a spare is made and claimed with.
struct SpareParts {
  CriClient& cri;
  SparePool& pool;
  ClaimBook& claims;
  Containers& containers;
  UserSandboxes& sandboxes;
  ContainerStarter& starter;
  Holders& holders;
  // Spares wait for no step's create, nor for a moment after. A burst's refill (more than one
  // spare to make) waits for removals too: the burst's first steps end while its last are
  // still being launched. One spare, a step's after another's, does not: it is to be ready
  // for the next step.
  StepWork& work;
};

class SpareContainers {
 public:
  // Reads the claims of spares a previous crispd left, and starts the thread that makes spares.
  SpareContainers(SpareParts parts, NodeSettings node, MountAttacher attach, Metrics& metrics);
  // The spares still unclaimed are removed.
  ~SpareContainers();

  // The step's container as a claimed spare, its mounts and devices attached; "": none to claim.
  Result<std::string> claim(const v1::CreateStepRequest& req, StepPlan& plan, PhaseClock& clock);
  // After a step's container was made or claimed: another spare like it, made in the background.
  void want(const v1::CreateStepRequest& req, const StepPlan& plan);
  // Spares unused for the grace period, removed; how many.
  uint64_t expire();
  // A user's ready spares (nullopt: every user's), removed, and those being made refused; how many.
  uint64_t remove(std::optional<uint32_t> uid);
  // Why the sweep removes c, a spare, if it does (not: claimed by a live step, or ready in the pool).
  RemovalCause to_remove(const cri::Container& c) const;
  size_t ready() const { return pool_.ready(); }
  size_t making() const { return pool_.making(); }

 private:
  // The key a step's container would have as a spare, if it may be one.
  std::optional<SpareKey> key_of(const v1::CreateStepRequest& req, const StepPlan& plan) const;
  // The spare made the step's: its claim recorded, the step's mounts and devices attached.
  Status fit(const v1::CreateStepRequest& req, const StepPlan& plan, const SpareKey& key, const Spare& spare);
  Result<Spare> make(const SpareKey& key, const std::string& user);
  void remove_one(const std::string& container_id);
  void loop();

  CriClient& cri_;
  SparePool& pool_;
  ClaimBook& claims_;
  Containers& containers_;
  UserSandboxes& sandboxes_;
  ContainerStarter& starter_;
  Holders& holders_;
  StepWork& work_;
  const NodeSettings node_;
  const MountAttacher attach_;
  Metrics& metrics_;
  const int64_t started_ns_;  // when this crispd started: older unclaimed spares are a previous one's
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<SpareKey, std::string>> queue_;  // keys to make, with the user's name
  bool stop_ = false;
  std::thread thread_;  // last: it uses everything above
};

}  // namespace crisp
