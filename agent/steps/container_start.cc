#include "agent/steps/container_start.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <mutex>

#include "agent/cri/cri_client.h"
#include "agent/cri/snapshot_client.h"
#include "agent/devices/cdi_hooks.h"
#include "agent/host/entrypoint.h"
#include "common/files.h"
#include "common/log.h"
#include "common/passwd.h"
#include "common/strings.h"

namespace crisp {

Status ContainerStarter::start(const v1::CreateStepRequest& req, StepPlan& plan, PhaseClock& clock) {
  clock.begin("start");
  if (auto s = start_and_find_holder(plan); !s) return s;
  clock.begin("holder");
  if (auto s = wait_for_holder(req, plan, plan.pid, join(plan.in.entrypoint, " ")); !s) return s;
  clock.begin("rootfs");
  if (auto s = run_hooks(plan); !s) return s;
  // Last, so the hooks and the entrypoint saw the root containerd made.
  if (auto s = give_rootfs(req, plan); !s) return s;
  if (plan.file_rc) clock.begin("entrypoint");
  return run_file_entrypoint(req, plan);
}

Status ContainerStarter::start_bare(const v1::CreateStepRequest& req, StepPlan& plan) {
  if (auto s = start_and_find_holder(plan); !s) return s;
  if (auto s = wait_for_holder(req, plan, plan.pid, ""); !s) return s;
  return give_rootfs(req, plan);
}

Result<int> ContainerStarter::holder_pid(const std::string& container_id) {
  auto status = cri_.container_status(container_id, true);
  if (!status) return status.take_error();
  return parse_container_pid({status->info().begin(), status->info().end()});
}

Status ContainerStarter::start_and_find_holder(StepPlan& plan) {
  if (auto s = cri_.start_container(plan.container_id); !s)
    return fail("cannot start the step's container from " + plan.in.image + ": " + s.error());
  auto pid = holder_pid(plan.container_id);
  if (!pid) return fail("the step's container did not start: " + pid.error());
  plan.pid = *pid;
  return Ok{};
}

// runc's init execs the container's process only after StartContainer has
// returned, and an entrypoint runs before it execs the holder: wait for it.
Status ContainerStarter::wait_for_holder(const v1::CreateStepRequest& req, StepPlan& plan, int pid,
                                         const std::string& entrypoint) {
  const StepContainerInput& in = plan.in;
  if (entrypoint.empty()) {
    if (auto ran = await_holder(pid, settings_.holder_exe, std::chrono::seconds(10)); !ran)
      return fail("the step's container " + ran.error());
    return Ok{};
  }
  std::string log_path = std::string(kLogDirectory) + "/" + in.log_path;
  CriLogTail tail(log_path, kEntrypointLogKept, [&] { return cri_.reopen_container_log(plan.container_id); });
  auto ran = await_holder(pid, settings_.holder_exe, settings_.entrypoint_timeout, [&] { tail.rotate_if_large(); });
  std::string log = tail.messages();
  if (!ran)
    return fail("the image's entrypoint " + entrypoint + " " + ran.error() +
                " (it must end with exec \"$@\")" + (log.empty() ? "" : "; its output ends: " + last_lines(log, 10, 2000)));
  // What the container writes from now on (a background process of the entrypoint's) is kept nowhere.
  if (auto s = silence_cri_log(log_path); !s) return s;
  if (auto s = cri_.reopen_container_log(plan.container_id); !s)
    return fail("cannot stop keeping the output of the container: " + s.error());
  unlink(log_path.c_str());
  if (req.entrypoint_log()) plan.out.set_entrypoint_log(log);
  auto env = holder_environment(pid);
  if (!env) return fail("cannot read the environment the entrypoint left: " + env.error());
  plan.out.clear_image_env();
  for (const std::string& e : *env) plan.out.add_image_env(e);
  return Ok{};
}

// A squashfs image's /etc/rc, in the file's root once it is the container's: its entrypoint
// execs a second holder, whose environment is the step's, then that holder goes (SIGTERM).
Status ContainerStarter::run_file_entrypoint(const v1::CreateStepRequest& req, StepPlan& plan) {
  if (!plan.file_rc) return Ok{};
  RootEntrypoint e{plan.pid, req.uid(), req.gid(), plan.creds.groups, {"/bin/sh", "/etc/rc"}, plan.in.env};
  e.argv.push_back(kHolderTarget);
  e.argv.push_back("0");
  for (const std::string& kv : req.entrypoint_env()) {  // the --container-env names, over the image's
    std::string name = kv.substr(0, kv.find('=') + 1);
    std::erase_if(e.env, [&](const std::string& have) { return have.starts_with(name); });
    e.env.push_back(kv);
  }
  auto pid = start_entrypoint_in_root(e);
  if (!pid) return fail("cannot run the image's entrypoint: " + pid.error());
  Status ran = wait_for_holder(req, plan, *pid, *plan.file_rc);
  kill(*pid, ran ? SIGTERM : SIGKILL);
  while (waitpid(*pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  return ran;
}

// The root filesystem becomes the user's, with them in its /etc/passwd and /etc/group.
Status ContainerStarter::give_rootfs(const v1::CreateStepRequest& req, StepPlan& plan) {
  RootfsRequest r;
  r.pid = plan.pid;
  r.user.uid = req.uid();
  r.user.gid = req.gid();
  auto pw = lookup_uid(req.uid());
  r.user.user = pw ? pw->name : req.user();
  r.user.home = pw ? pw->home : "";
  r.user.gecos = pw ? pw->gecos : "";
  r.user.shell = pw ? pw->shell : "";
  r.user.group = lookup_gid(req.gid()).value_or(r.user.user);
  r.readonly = req.readonly_rootfs();
  r.stage = settings_.rootfs_stage;
  r.image_root = plan.image_root.get();
  r.image_to_extract = plan.image_to_extract.get();
  // The layers as containerd holds them: the container's own processes are the user's.
  if (settings_.snapshots) {
    auto layers = settings_.snapshots->mounts(plan.container_id);
    if (!layers) return fail("cannot ask containerd for the container's layers: " + layers.error());
    r.snapshot = std::move(*layers);
  }
  for (const cri::Mount& m : plan.config.mounts()) r.bind_sources.push_back(m.host_path());
  // The node's timezone: the admin's file, read as root.
  if (auto tz = read_text("/etc/localtime", 1u << 20)) r.localtime = *tz;
  Status given = give_rootfs_(r);
  plan.rootfs_given = given.ok();
  // A squashfs image exists only in the new root: without it the container would run the sandbox's.
  if (!given && (plan.image_root || plan.image_to_extract)) return fail("cannot make the squashfs image the container's root: " + given.error());
  if (!given && given.error_kind() == ErrorKind::kUnsupported) {
    // The step still runs, in root's files, as before crisp did this; the admin hears once.
    static std::once_flag said;
    std::call_once(said, [&] { log_warn("containers keep root's files on this node: " + given.error()); });
    return Ok{};
  }
  return given;
}

Status ContainerStarter::run_hooks(const StepPlan& plan) {
  for (const CdiHook& hook : plan.hooks)
    if (auto s = run_cdi_hook(hook, oci_state_json(plan.container_id, plan.pid,
                                                   settings_.bundle_root + "/" + plan.container_id));
        !s)
      return s;
  return Ok{};
}

}  // namespace crisp
