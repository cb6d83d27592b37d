// slurmstepd: one container per step on this node, created before the tasks
// are forked; every task joins it, then runs as the user inside the image.
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <chrono>
#include <optional>

#include "common/cgroups.h"
#include "common/client.h"
#include "common/env.h"
#include "common/layout.h"
#include "common/mount_spec.h"
#include "common/slurm_ids.h"
#include "common/strings.h"
#include "spank/contexts.h"
#include "spank/id_calls_filter.h"
#include "spank/join.h"
#include "spank/pmix_spool.h"
#include "spank/remap_root.h"
#include "spank/seam.h"
#include "spank/task_mounts.h"

namespace crisp {
namespace {

struct StepState {
  bool active = false;    // the step asked for a container
  bool created = false;   // crispd made one: release it at the step's end
  // Errors before the tasks wait for them. Returned from init_post_opt, Slurm
  // would fail the launch (draining a batch step's node) with the message unseen:
  // slurmstepd's stderr is not yet the user's. task_init_privileged fails the tasks
  // alone (end_task), and the first one prints it.
  std::string error;
  ContainerOptions opts;
  StepContext step;  // its env is the step's, before Slurm binds each task to its GPUs
  std::optional<AgentCall> call;  // sent in init_post_opt, answered in user_init
  v1::CreateStepResponse container;
  StepNamespaces ns;  // opened in user_init: in slurmstepd, else in a clone of it (contain_spank)
  uint32_t tasks_started = 0, tasks_exited = 0;  // this node's, as slurmstepd forks and reaps them
  std::string task_error;  // this task's (a forked child's own copy), from task_init_privileged
};

// crispd's own limit on a save (--container-save of a large container), and some.
constexpr int kSaveTimeoutS = 1860;

StepState& step_state() {
  static StepState s;
  return s;
}

void release(StepState& st) {
  v1::Request req;
  req.mutable_release_step()->set_job_id(st.step.job_id);
  req.mutable_release_step()->set_step_id(st.step.step_id);
  auto resp = call_agent(plugin_state().config.socket, req, std::chrono::seconds(60));
  if (!resp)
    seam::daemon_log("releasing job " + std::to_string(st.step.job_id) + " step " +
                     std::to_string(st.step.step_id) + ": " + resp.error() + " (the sweep will remove it)");
}

// A task that cannot run in its container ends in task_init, before Slurm execs its command,
// with exit status 1: Slurm reports that as the task's own (srun's status, the job FAILED
// with its exit code, --kill-on-bad-exit) and adds nothing to crisp's one line. Returned as
// an error from either callback, Slurm would print its own lines after ours ("spank:
// required plugin ... failed", "spank_task_init_privileged failed", "fatal: ...").
constexpr int kTaskFailedStatus = 1;

// task_init_privileged's failure, kept for task_init (the same process, later).
int defer_failure(StepState& st, const std::string& message) {
  if (st.task_error.empty()) st.task_error = message;
  return 0;
}

// Only the first local task prints: one line per step and node, not one per task.
[[noreturn]] void end_task(spank_t sp, const std::string& message) {
  if (seam::local_task_id(sp) == 0) seam::user_error(message);
  seam::exit_task(kTaskFailedStatus);
}

// Kept for the tasks to print, and logged by slurmstepd for the admin.
void hold_error(StepState& st, const std::string& error) {
  st.error = error;
  seam::daemon_log("job " + std::to_string(st.step.job_id) + " step " + std::to_string(st.step.step_id) + ": " + error);
}

// user_init opened the namespaces in slurmstepd, whose tasks inherit them; under
// SlurmdParameters=contain_spank it ran in a clone whose descriptors closed with
// it, and this task opens them again, checked by the holder's pid and start time.
Status namespaces_here(StepState& st, bool log) {
  if (st.ns.held_here()) return Ok{};
  if (log)
    seam::daemon_log("user_init ran in a process of its own (" + std::to_string(st.ns.mnt.opener()) +
                     "; SlurmdParameters=contain_spank): each task opens the container's namespaces");
  auto ns = StepNamespaces::open(st.container, kHolderTarget);
  if (!ns) return ns.take_error();
  st.ns = std::move(*ns);  // forgets the old numbers, closing none
  return Ok{};
}

}  // namespace

int remote_init_post_opt(spank_t sp) {
  StepState& st = step_state();
  PluginState& ps = plugin_state();
  std::vector<std::string> env = seam::job_env(sp);
  if (auto s = apply_environment(ps.raw, [&](const std::string& n) { return env_value(env, n); }); !s) {
    st.active = true;
    st.error = s.error();
    return 0;
  }
  auto opts = validate_options(ps.raw, ps.config);
  if (!opts) {
    st.active = true;
    st.error = opts.error();
    return 0;
  }
  if (!opts->active) return 0;
  auto step = seam::read_step(sp);
  if (!step) {
    st.active = true;
    st.error = step.error();
    return 0;
  }
  if (step->step_id == slurm::kExternStep) return 0;
  st.active = true;
  st.opts = *opts;
  st.step = *step;

  // Sent now, as root (crispd serves slurmstepd by its uid); waited for in
  // user_init, once srun has its launch answer and the step's stderr is the user's.
  v1::Request req;
  *req.mutable_create_step() = build_create_request(st.step, st.opts, ps.config);
  auto call = AgentCall::start(ps.config.socket, req, std::chrono::seconds(ps.config.timeout_s));
  if (!call) {
    hold_error(st, call.error());
    return 0;
  }
  st.call.emplace(std::move(*call));
  return 0;
}

int remote_user_init(spank_t sp) {
  StepState& st = step_state();
  if (!st.call) return 0;
  // Node 0 alone tells the user how a pull is going: one line per step.
  bool tell = seam::node_id(sp) == 0;
  auto resp = st.call->finish([&](const std::string& line) {
    if (tell) seam::user_error(line);
  });
  st.call.reset();
  if (!resp) {
    hold_error(st, resp.error());
    // No release: crispd undid a failed request itself, and what a late answer
    // makes exits with this slurmstepd (the holder watches it) for the sweep.
    return 0;
  }
  st.created = true;
  st.container = resp->create_step();
  // Opened here, in slurmstepd before it forks the tasks, so every task inherits
  // the same descriptors: one check of the holder, and all tasks join the very
  // namespaces it named, even if it exits in between. In task_init_privileged
  // each task (a fork of its own: no "first" shares with the others) would open
  // and check them anew, and a holder gone between two tasks would split the step.
  auto ns = StepNamespaces::open(st.container, kHolderTarget);
  if (!ns) {
    hold_error(st, ns.error());
    return 0;
  }
  st.ns = std::move(*ns);
  seam::daemon_log("completed container setup in " + std::to_string(st.container.setup_ms()) + " ms (" +
                   st.container.image() + (st.container.attached() ? ", joined named container " + st.opts.name : "") +
                   ")");
  return 0;
}

int remote_task_init_privileged(spank_t sp) {
  StepState& st = step_state();
  if (!st.active) return 0;
  if (!st.error.empty()) return defer_failure(st, st.error);
  if (auto s = namespaces_here(st, seam::local_task_id(sp) == 0); !s) return defer_failure(st, s.error());
  // PMIx's server directory exists only now that slurmstepd forks the tasks,
  // and its variables are set only after this callback: the path is Slurm's rule.
  std::vector<std::string> env = seam::job_env(sp);
  std::optional<std::string> pmix_dir;
  if (auto mpi = env_value(env, "SLURM_MPI_TYPE"); mpi && starts_with(*mpi, "pmix")) {
    auto spool = pmix_spool_dir(st.step.job_id, st.step.step_id);
    if (!spool) return defer_failure(st, spool.error());
    pmix_dir = *spool + "/pmix." + std::to_string(st.step.job_id) + "." + std::to_string(st.step.step_id);
  }
  // The container's processes (its holder, what an entrypoint left running)
  // into this task's Slurm cgroups: the job's limits, and Slurm's kill at the end.
  if (seam::local_task_id(sp) == 0 && !st.container.attached()) {
    SlurmLevel level = st.opts.name.empty() ? SlurmLevel::kStep
                       : plugin_state().config.global_scope ? SlurmLevel::kUser : SlurmLevel::kJob;
    if (auto s = adopt_container_processes(st.container.holder_pid(), level, st.step.job_id); !s)
      return defer_failure(st, "cannot put the container in the job's cgroups: " + s.error());
  }
  Fd tree_fd;
  if (pmix_dir) {
    auto t = clone_host_tree(*pmix_dir);
    if (!t) return defer_failure(st, t.error());
    tree_fd = std::move(*t);
  }
  Status joined = Ok{};
  for (const auto& [ns, what] : {std::pair{&st.ns.net, "network"}, {&st.ns.ipc, "IPC"}, {&st.ns.uts, "UTS"}})
    if (joined && ns->recorded()) joined = enter_ns(ns->here(), what);
  if (joined) joined = join_mount_ns(st.ns.mnt.here());
  if (joined && tree_fd) joined = attach_tree(tree_fd.get(), *pmix_dir);
  tree_fd.reset();
  if (!joined) return defer_failure(st, joined.error());
  // This task is inside now; the user's process has no use for the fds.
  for (HeldNs* ns : {&st.ns.mnt, &st.ns.net, &st.ns.ipc, &st.ns.uts}) ns->reset();
  if (seam::local_task_id(sp) == 0 && !st.container.attached())
    for (const MountSpec& m : st.opts.mounts)
      if (m.propagation.ends_with("unbindable"))
        if (auto s = make_unbindable(m.target, m.propagation == "runbindable"); !s) return defer_failure(st, s.error());
  if (seam::local_task_id(sp) == 0) {
    if (st.container.running() && !st.opts.mounts.empty())
      seam::user_error("ignoring --container-mounts when attaching to a running container (" + st.opts.name + ")");
    else if (st.container.attached() && !st.opts.mounts.empty())
      seam::user_error("--container-mounts not applied: the step joined the existing container " + st.opts.name +
                       ", which keeps the mounts it was created with");
    if (!st.container.entrypoint_log().empty()) seam::user_output(st.container.entrypoint_log());
  }
  return 0;
}

int remote_task_init(spank_t sp) {
  StepState& st = step_state();
  if (!st.active) return 0;
  if (!st.task_error.empty()) end_task(sp, st.task_error);
  // The site's variables after the image's: where both set one, the site's wins (enroot's order).
  std::vector<std::string> image_env(st.container.image_env().begin(), st.container.image_env().end());
  image_env.insert(image_env.end(), st.container.site_env().begin(), st.container.site_env().end());
  std::vector<std::string> job_env = seam::job_env(sp);
  std::vector<EnvEdit> edits = merge_env(image_env, job_env, st.opts.env_names);
  for (EnvEdit& e : pytorch_env(image_env, job_env)) edits.push_back(std::move(e));
  std::vector<std::string> device_env(st.container.device_env().begin(), st.container.device_env().end());
  for (const std::string& kv : device_env) {
    size_t eq = kv.find('=');
    if (eq != std::string::npos) edits.push_back({kv.substr(0, eq), kv.substr(eq + 1)});
  }
  // Later edits win: a task bound to some of the step's GPUs sees only those.
  if (auto gpus = env_value(device_env, "CUDA_VISIBLE_DEVICES"))
    for (EnvEdit& e : task_gpu_env(st.step.env, job_env, static_cast<unsigned>(split(*gpus, ',').size())))
      edits.push_back(std::move(e));

  // The image's WorkingDir before the job's directory, as with Pyxis.
  std::string dir = st.opts.workdir.empty() ? st.container.image_workdir() : st.opts.workdir;
  // Attached to a running step: where the image starts, not the job's directory (Pyxis's).
  if (dir.empty() && st.container.running()) dir = "/";
  if (!dir.empty()) {
    if (dir.front() != '/') dir = "/" + dir;
    if (chdir(dir.c_str()) != 0)
      end_task(sp, "cannot enter the working directory in the container: " + dir + ": " + errno_text(errno));
    char cwd[PATH_MAX];
    edits.push_back({"PWD", getcwd(cwd, sizeof cwd) ? std::string(cwd) : dir});
  }
  if (st.opts.remap_root) edits.push_back({"HOME", "/root"});
  if (auto s = seam::apply_env(sp, edits); !s) end_task(sp, s.error());
  // Last: the user namespace leaves this task no rights over slurmstepd's setup. The
  // step's own (its keeper's, shared by its tasks and by steps attached to it), else one
  // of the task's.
  if (st.ns.user.recorded()) {
    Status entered = enter_ns(st.ns.user.here(), "user");
    st.ns.user.reset();
    if (!entered) end_task(sp, entered.error());
  } else if (st.opts.remap_root) {
    if (auto s = remap_to_root(st.step.uid, st.step.gid); !s) end_task(sp, s.error());
  }
  if (st.step.uid != 0)
    if (auto s = fake_id_calls(); !s) end_task(sp, s.error());
  return 0;
}

int remote_task_post_fork(spank_t) {
  step_state().tasks_started++;
  return 0;
}

namespace {

// --container-save, by the node's last task to exit, as Pyxis does: each node saves its container.
void save_container(StepState& st) {
  const std::string& given = st.opts.save_path;
  if (given.front() != '/' && st.step.workdir.empty())
    return seam::stepd_error("--container-save=" + given + ": the job's directory is unknown; give an absolute path");
  v1::Request req;
  v1::SaveStepRequest* save = req.mutable_save_step();
  save->set_job_id(st.step.job_id);
  save->set_step_id(st.step.step_id);
  save->set_container_id(st.container.container_id());
  save->set_uid(st.step.uid);
  save->set_gid(st.step.gid);
  for (uint32_t g : st.step.groups) save->add_supplementary_gids(g);
  save->set_path(given.front() == '/' ? given : normalize_path(st.step.workdir + "/" + given));
  auto resp = call_agent(plugin_state().config.socket, req, std::chrono::seconds(kSaveTimeoutS));
  if (!resp) return seam::stepd_error(resp.error());
  seam::daemon_log("saved the container to " + save->path() + " (" + std::to_string(resp->save_step().bytes()) +
                   " bytes in " + std::to_string(resp->save_step().ms()) + " ms)");
}

}  // namespace

int remote_task_exit(spank_t sp) {
  StepState& st = step_state();
  if (!st.active || st.opts.save_path.empty()) return 0;
  uint32_t tasks = seam::local_task_count(sp);
  if (++st.tasks_exited != tasks || !st.created || !st.error.empty()) return 0;
  if (st.tasks_started < tasks) {
    seam::stepd_error("--container-save skipped: not all of the step's tasks on this node started");
    return 0;
  }
  save_container(st);
  return 0;
}

int remote_exit(spank_t) {
  StepState& st = step_state();
  st.ns = {};  // closes only what this process holds: a clone's numbers are slurmstepd's own files
  if (st.created) release(st);
  return 0;
}

}  // namespace crisp
