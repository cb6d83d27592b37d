// The steps running in each container and their sessions (agent/host/step_session.h):
// what a step attaching to a running container joins, as Pyxis's attach does.
#include <algorithm>

#include "agent/cri/labels.h"
#include "agent/step_manager.h"
#include "common/files.h"
#include "common/strings.h"

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

std::optional<StepManager::RunningStep> StepManager::running_step(const std::string& container_id) {
  std::lock_guard lock(running_mu_);
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

Status StepManager::note_running(const std::string& container_id, const v1::CreateStepRequest& req, RunningStep step,
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
  std::lock_guard lock(running_mu_);
  running_[container_id].push_back(std::move(step));
  return Ok{};
}

Status StepManager::start_step_session(const std::string& container_id, int holder_pid, const v1::CreateStepRequest& req,
                                       v1::CreateStepResponse& out) {
  RunningStep step;
  // Without either, the container's own namespaces serve: nothing to start.
  if (req.remap_root() || req.unshare() != 0) {
    auto keeper = settings_.start_session({holder_pid, req.stepd_pid(), req.uid(), req.gid(), req.unshare(), settings_.tmpfs_size});
    if (!keeper) return keeper.take_error();
    step.keeper = std::make_shared<SessionKeeper>(std::move(*keeper));
    step.owns_keeper = true;
    step.userns = req.remap_root();
    step.unshare = req.unshare();
  }
  return note_running(container_id, req, std::move(step), out);
}

Status StepManager::enter_container(const std::string& container_id, int holder_pid, const v1::CreateStepRequest& req,
                                    v1::CreateStepResponse& out) {
  std::optional<RunningStep> running;
  if (req.name_mode() != v1::NAME_NO_EXEC) running = running_step(container_id);
  if (!running) {
    if (req.name_mode() == v1::NAME_EXEC)
      return fail("no step of the container named " + req.name() + " is running on this node: --container-name=" +
                  req.name() + ":exec only attaches to a running one");
    return start_step_session(container_id, holder_pid, req, out);
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
  return note_running(container_id, req, std::move(step), out);
}

void StepManager::forget_running_where(const std::function<bool(const std::string&, const RunningStep&)>& which) {
  std::vector<std::shared_ptr<SessionKeeper>> ended;
  {
    std::lock_guard lock(running_mu_);
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
  for (const auto& k : ended) settings_.end_holder(k->pidfd.get());
}

void StepManager::forget_step(uint32_t job_id, uint32_t step_id) {
  forget_running_where([&](const std::string&, const RunningStep& r) { return r.job_id == job_id && r.step_id == step_id; });
}

void StepManager::forget_job_steps(uint32_t job_id) {
  forget_running_where([&](const std::string&, const RunningStep& r) { return r.job_id == job_id; });
}

void StepManager::forget_container(const std::string& container_id) {
  forget_running_where([&](const std::string& id, const RunningStep&) { return id == container_id; });
}

// JOBID.STEPID: a running unnamed step's container, the user's own, as Pyxis names it.
Result<std::optional<cri::Container>> StepManager::find_step_container(uint32_t uid, const std::string& name) {
  std::vector<std::string> parts = split(name, '.');
  auto digits = [](const std::string& p) {
    return !p.empty() && p.size() <= 10 && std::all_of(p.begin(), p.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (parts.size() != 2 || !digits(parts[0]) || !digits(parts[1])) return std::optional<cri::Container>();
  Labels sel = job_selector(labels::number(parts[0]));
  sel[labels::kStep] = std::to_string(labels::number(parts[1]));
  sel[labels::kUid] = std::to_string(uid);
  auto found = find_containers(sel);
  if (!found) return found.take_error();
  for (const cri::Container& c : *found)
    if (c.state() == cri::CONTAINER_RUNNING && labels::value_of(c.labels(), labels::kName).empty() && running_step(c.id()))
      return std::optional<cri::Container>(c);
  return std::optional<cri::Container>();
}

}  // namespace crisp
