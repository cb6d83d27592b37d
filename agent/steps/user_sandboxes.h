// UserSandboxes: each user's pod sandbox on the node, made by their first step and
// kept while it holds containers, then for the sweep's grace period for their next
// job, so RunPodSandbox is paid once per user and node, not per job. Its id is
// remembered: a create asks containerd for it only the first time.
// Calls: JobLocks (the user's lock), containerd's CRI.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "agent/cri/cri_types.h"
#include "agent/cri/spec_builder.h"
#include "agent/steps/job_locks.h"

namespace crisp {

class CriClient;

class PhaseClock;

class UserSandboxes {
 public:
  UserSandboxes(CriClient& cri, JobLocks& locks, NodeSettings node, std::string runtime_handler)
      : cri_(cri), locks_(locks), node_(std::move(node)), runtime_handler_(std::move(runtime_handler)) {}

  // A container in the user's sandbox (made if missing); an empty sandbox is left to the
  // sweep on failure. image names the container in its error; clock, if given, enters
  // "create" once the sandbox is there.
  Result<std::string> create_container(uint32_t uid, const std::string& user, const cri::ContainerConfig& config,
                                       const std::string& image, PhaseClock* clock);
  // A container of the sandbox was removed.
  void touch(const std::string& sandbox_id);
  // When a container was last made or removed in the sandbox (its creation if not
  // since this crispd started), in ns since the epoch.
  int64_t last_used_ns(const cri::PodSandbox& sandbox);
  // Removes the sandbox if it holds no container (under its user's lock); whether it did.
  Result<bool> remove_if_empty(const cri::PodSandbox& sandbox);

 private:
  // The container in sandbox, its use noted; clock enters "create". Call with the user's lock held.
  Result<std::string> create_in(const std::string& sandbox, const cri::ContainerConfig& config,
                                const cri::PodSandboxConfig& sandbox_config, PhaseClock* clock);
  // Call with the user's lock held.
  Result<std::string> find_or_run(uint32_t uid, const cri::PodSandboxConfig& config);
  std::optional<std::string> known(uint32_t uid);
  void remember(uint32_t uid, const std::string& sandbox_id);
  void forget_if(uint32_t uid, const std::string& sandbox_id);  // if it is still the one known

  CriClient& cri_;
  JobLocks& locks_;
  const NodeSettings node_;
  const std::string runtime_handler_;
  std::mutex mu_;
  std::map<std::string, int64_t> used_ns_;  // by sandbox id
  std::map<uint32_t, std::string> ids_;     // by uid: the sandbox this crispd found or made
};

}  // namespace crisp
