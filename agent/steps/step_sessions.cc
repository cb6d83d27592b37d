#include "agent/steps/step_sessions.h"

#include <algorithm>

#include "common/files.h"
#include "common/layout.h"

namespace crisp {
namespace {

bool alive(int pid, uint64_t start_time) {
  auto started = process_start_time(pid);
  return started && *started == start_time;
}

struct NamespaceName {
  uint32_t bit;
  const char* option;  // as --container-unshare names it
  const char* words;   // as Pyxis's message names it
};
constexpr NamespaceName kNamespaces[] = {
    {kUnshareNet, "net", "network"}, {kUnshareIpc, "ipc", "IPC"}, {kUnshareUts, "uts", "UTS"}};

}  // namespace

std::optional<StepSessions::RunningStep> StepSessions::newest(const std::string& container_id) {
  std::lock_guard lock(mu_);
  auto it = running_.find(container_id);
  if (it == running_.end()) return std::nullopt;
  // A step whose keeper is gone (its own step ended) has namespaces no one can enter any more.
  std::erase_if(it->second, [](const RunningStep& r) {
    return !alive(r.stepd_pid, r.stepd_start) || (r.keeper && !alive(r.keeper->pid, r.keeper->start_time));
  });
  if (it->second.empty()) {
    running_.erase(it);
    return std::nullopt;
  }
  return it->second.back();
}

Status StepSessions::note(const std::string& container_id, const v1::CreateStepRequest& req, RunningStep step,
                                 v1::CreateStepResponse& out) {
  auto started = process_start_time(req.stepd_pid());
  if (!started) return fail("slurmstepd " + std::to_string(req.stepd_pid()) + " exited while its container was made");
  step.job_id = req.job_id();
  step.step_id = req.step_id();
  step.stepd_pid = req.stepd_pid();
  step.stepd_start = *started;
  if (step.keeper) {
    out.set_session_pid(step.keeper->pid);
    out.set_session_start_time(step.keeper->start_time);
  }
  out.set_unshare(step.unshare);
  out.set_session_userns(step.userns);
  std::lock_guard lock(mu_);
  running_[container_id].push_back(std::move(step));
  return Ok{};
}

Status StepSessions::start(const std::string& container_id, int holder_pid, const v1::CreateStepRequest& req,
                                       v1::CreateStepResponse& out) {
  RunningStep step;
  // Without either, the container's own namespaces serve: nothing to start.
  if (req.remap_root() || req.unshare() != 0) {
    auto keeper = start_({holder_pid, req.stepd_pid(), req.uid(), req.gid(), req.unshare(), shm_size_});
    if (!keeper) return keeper.take_error();
    step.keeper = std::make_shared<SessionKeeper>(std::move(*keeper));
    step.owns_keeper = true;
    step.userns = req.remap_root();
    step.unshare = req.unshare();
  }
  return note(container_id, req, std::move(step), out);
}

Status StepSessions::enter(const std::string& container_id, int holder_pid, const v1::CreateStepRequest& req,
                                    v1::CreateStepResponse& out) {
  std::optional<RunningStep> running;
  if (req.name_mode() != v1::NAME_NO_EXEC) running = newest(container_id);
  if (!running) {
    if (req.name_mode() == v1::NAME_EXEC)
      return fail("no step of the container named " + req.name() + " is running on this node: --container-name=" +
                  req.name() + ":exec only attaches to a running one");
    return start(container_id, holder_pid, req, out);
  }
  for (const NamespaceName& ns : kNamespaces)
    if ((req.unshare() & ns.bit) && !(running->unshare & ns.bit))
      return fail("--container-unshare=" + std::string(ns.option) + " requested but the container is not in a separate " +
                  ns.words + " namespace");
  out.set_running(true);
  RunningStep step = *running;
  step.owns_keeper = false;
  // Pyxis enters the running process's user namespace: root there if it was made so.
  step.userns = step.keeper && (running->userns || req.remap_root());
  return note(container_id, req, std::move(step), out);
}

void StepSessions::forget_where(const std::function<bool(const std::string&, const RunningStep&)>& which) {
  std::vector<std::shared_ptr<SessionKeeper>> ended;
  {
    std::lock_guard lock(mu_);
    for (auto it = running_.begin(); it != running_.end();) {
      std::erase_if(it->second, [&](const RunningStep& r) {
        if (!which(it->first, r)) return false;
        if (r.owns_keeper && r.keeper) ended.push_back(r.keeper);
        return true;
      });
      it = it->second.empty() ? running_.erase(it) : std::next(it);
    }
  }
  // A step attached to it keeps its namespaces alive: they are its tasks'.
  for (const auto& k : ended) end_(k->pidfd.get());
}

void StepSessions::forget_step(uint32_t job_id, uint32_t step_id) {
  forget_where([&](const std::string&, const RunningStep& r) { return r.job_id == job_id && r.step_id == step_id; });
}

void StepSessions::forget_job(uint32_t job_id) {
  forget_where([&](const std::string&, const RunningStep& r) { return r.job_id == job_id; });
}

void StepSessions::forget_container(const std::string& container_id) {
  forget_where([&](const std::string& id, const RunningStep&) { return id == container_id; });
}

bool StepSessions::any_running(const std::string& container_id) { return newest(container_id).has_value(); }

}  // namespace crisp
