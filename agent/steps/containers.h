// Containers: crispd's containers as containerd lists them (a claimed spare seen as
// its step's), and their removal with everything they leave on the host: the holder,
// its sessions, its mounts and HCA view, what a named container's processes left in
// Slurm's cgroups, its claim and its place in the spare pool.
// Calls: containerd's CRI, Holders, StepSessions, UserSandboxes, ClaimBook, SparePool.
#pragma once

#include <string>
#include <vector>

#include "agent/cri/cri_types.h"
#include "agent/spares/claims.h"
#include "agent/spares/spare_pool.h"
#include "agent/steps/holders.h"
#include "agent/steps/step_sessions.h"
#include "agent/steps/user_sandboxes.h"

namespace crisp {

class CriClient;

// The labels every container of a job has (job 0: named containers of global scope, sandboxes).
Labels job_selector(uint32_t job_id);

class Containers {
 public:
  // stop_timeout_s: what containerd's stop waits for a holder this crispd does not know.
  Containers(CriClient& cri, Holders& holders, StepSessions& sessions, UserSandboxes& sandboxes, ClaimBook& claims,
             SparePool& pool, int64_t stop_timeout_s)
      : cri_(cri),
        holders_(holders),
        sessions_(sessions),
        sandboxes_(sandboxes),
        claims_(claims),
        pool_(pool),
        stop_timeout_s_(stop_timeout_s) {}

  // The containers selector names, claimed spares among them with their claim's job and
  // step: what every reader of a container's labels must see. Unclaimed spares are not.
  Result<std::vector<cri::Container>> find(const Labels& selector);
  // What removing containers came to: how many went, and the last error of those that did not.
  struct Removed {
    uint32_t count = 0;
    Status status = Ok{};
  };
  // host: whether to give back what they held on the host (give_back_host), or not: a
  // removal that waited gave it back before, and a job requeued onto the node meanwhile may
  // use the same paths (they are named by job and step).
  enum class Host { kGiveBack, kGivenBack };
  Removed remove(const std::vector<cri::Container>& containers, Host host = Host::kGiveBack);
  // The first half of a job's end, what its epilog waits for: no process of the job is left
  // on the node (its containers' holders, and what named ones left in its cgroups), and what
  // they held on the host is given back (tmpfs roots, HCA views): the node's next job, another
  // user's maybe, is not to wait for containerd's removal to get that memory back.
  Status end_job_processes(uint32_t job_id);
  // What c's processes held on the host: its tmpfs roots (their memory, once no process is
  // left in the container) and its HCA view. Idempotent.
  void give_back_host(const cri::Container& c);
  // What crispctl list shows: a job's containers (0: every job's), only uid's (< 0: everyone's).
  Result<v1::ListResponse> list(uint32_t job_id, int64_t only_uid);

 private:
  std::vector<std::string> adopted_cgroups(const cri::Container& c);
  // After a refused removal: whether containerd has noted the container's exit, waited for.
  bool exit_noted(const std::string& id);

  CriClient& cri_;
  Holders& holders_;
  StepSessions& sessions_;
  UserSandboxes& sandboxes_;
  ClaimBook& claims_;
  SparePool& pool_;
  const int64_t stop_timeout_s_;
};

// Removes a created container unless kept (a create that succeeded).
class ContainerGuard {
 public:
  ContainerGuard(Containers& containers, std::string id) : containers_(containers), id_(std::move(id)) {}
  ~ContainerGuard();
  ContainerGuard(const ContainerGuard&) = delete;
  ContainerGuard& operator=(const ContainerGuard&) = delete;
  void keep() { id_.clear(); }

 private:
  Containers& containers_;
  std::string id_;
};

}  // namespace crisp
