#include "agent/steps/step_creator.h"

#include "agent/cri/labels.h"
#include "agent/metrics/metrics.h"
#include "agent/steps/step_paths.h"
#include "common/files.h"
#include "common/log.h"
#include "common/slurm_ids.h"

namespace crisp {

Result<v1::CreateStepResponse> StepCreator::create(const v1::CreateStepRequest& req, const PullWaiter& waiter) {
  std::optional<StepWork::Busy> busy(std::in_place, p_.work, StepWork::Work::kCreate);
  PhaseClock clock;
  auto out = create_in_phases(req, waiter, clock, busy);
  if (!out && out.error_kind() == ErrorKind::kCancelled) metrics_.setup_cancelled();
  else if (!out) metrics_.setup_failed(clock.phase());
  return out;
}

Result<v1::CreateStepResponse> StepCreator::create_in_phases(const v1::CreateStepRequest& req, const PullWaiter& waiter,
                                                             PhaseClock& clock, std::optional<StepWork::Busy>& busy) {
  StepPlan plan = StepPlan::of(req);
  plan.waiter = &waiter;
  clock.begin("site");
  auto read = p_.site.read(req);
  if (!read) return read.take_error();
  JobSite site = std::move(*read);
  plan.job_env = site.job_env;
  if (plan.named) {
    clock.begin("join");
    std::optional<v1::CreateStepResponse> found;
    {
      auto lock = p_.locks.lock_job(plan.scope.job_id);
      auto joined = p_.named.join(plan.scope, req);
      if (!joined) return joined.take_error();
      found = std::move(*joined);
    }
    // A join's hooks run without the job's lock: no one's hooks hold up another's step.
    if (found) return finish_join(req, std::move(*found), site, clock);
  }
  clock.begin("paths");
  if (auto s = p_.site.mounts(site, plan); !s) return s.take_error();
  if (auto s = resolve_user_paths(req, plan); !s) return s.take_error();
  clock.begin("devices");
  if (auto s = p_.devices.plan(req, plan); !s) return s.take_error();
  clock.begin("image");
  size_t binds_before_image = plan.user_mounts.size(), tmpfs_before_image = plan.tmpfs_mounts.size();
  // Waiting for a pull, minutes maybe, is no launch: spares and removals need not wait for it.
  busy.reset();
  auto resolved = p_.image.resolve(req, plan);
  busy.emplace(p_.work, StepWork::Work::kCreate);
  if (!resolved) return resolved.take_error();
  if (auto s = finish_unmounts(plan, binds_before_image, tmpfs_before_image); !s) return s.take_error();

  clock.begin("host");
  auto hold = hold_job(req, plan);
  if (!hold) return hold.take_error();
  if (hold->joined) {
    hold->whole.reset();
    return finish_join(req, std::move(*hold->joined), site, clock);
  }
  HostArtifacts host;
  if (auto s = p_.host.prepare(req, plan, host); !s) return s.take_error();
  if (auto s = p_.image.choose_cri_image(plan); !s) return s.take_error();
  plan.config = build_step_container(plan.in, node_);
  auto id = p_.spares.claim(req, plan, clock);
  if (id && id->empty()) id = make_container(req, plan, clock);
  if (!id) return id.take_error();
  ContainerGuard guard(p_.containers, *id);
  if (!plan.claimed)
    if (auto s = p_.starter.start(req, plan, clock); !s) return s.take_error();
  auto started = process_start_time(plan.pid);
  if (!started) return fail("the step's container exited as it was made: " + started.error());
  if (!site.lines.hooks.empty()) clock.begin("hooks");
  auto hook_env = p_.site.run_hooks(site, req, {plan.pid, *started, plan.container_id});
  if (!hook_env) return hook_env.take_error();
  if (auto s = start_session(req, plan, *started, clock); !s) return s.take_error();
  guard.keep();
  host.keep();
  p_.spares.want(req, plan);
  return finish(req, plan.out, site, *hook_env, plan.claimed ? SetupKind::kSpareClaim : SetupKind::kNew, clock, plan.named);
}

Result<StepCreator::JobHold> StepCreator::hold_job(const v1::CreateStepRequest& req, const StepPlan& plan) {
  JobHold hold;
  // Unnamed steps touch only their own container: they are made side by side.
  if (!plan.named) {
    hold.shared.emplace(p_.locks.share_job(plan.scope.job_id));
    return hold;
  }
  hold.whole.emplace(p_.locks.lock_job(plan.scope.job_id));
  // Another step of the job may have made it while the image was pulled.
  auto joined = p_.named.join(plan.scope, req);
  if (!joined) return joined.take_error();
  hold.joined = std::move(*joined);
  return hold;
}

Result<std::string> StepCreator::make_container(const v1::CreateStepRequest& req, StepPlan& plan, PhaseClock& clock) {
  clock.begin("sandbox");
  auto id = p_.sandboxes.create_container(req.uid(), req.user(), plan.config, plan.in.image, &clock);
  if (!id && !plan.named && remove_stale_step(req))
    id = p_.sandboxes.create_container(req.uid(), req.user(), plan.config, plan.in.image, &clock);
  if (!id) return id.take_error();
  plan.container_id = *id;
  return id;
}

bool StepCreator::remove_stale_step(const v1::CreateStepRequest& req) {
  Labels sel = job_selector(req.job_id());
  sel[labels::kStep] = std::to_string(req.step_id());
  auto stale = p_.containers.find(sel);
  if (!stale || stale->empty()) return false;
  log_warn("removing " + std::to_string(stale->size()) + " stale container(s) of " + slurm::step_text(req.job_id(), req.step_id()));
  return p_.containers.remove(*stale).count > 0;
}

Status StepCreator::start_session(const v1::CreateStepRequest& req, StepPlan& plan, uint64_t started, PhaseClock& clock) {
  // A slurmstepd that gave up waiting (or died: its job cancelled, whose epilog
  // may already have run) will never use nor release this; a named container
  // would outlive its job.
  clock.begin("session");
  if (process_gone(req.stepd_pid()))
    return fail(ErrorKind::kCancelled, "slurmstepd " + std::to_string(req.stepd_pid()) + " exited while its container was made");
  if (auto s = p_.sessions.start(plan.container_id, plan.pid, req, plan.out); !s) return s;
  p_.holders.keep(plan.container_id, plan.pid, started);
  plan.out.set_holder_pid(plan.pid);
  plan.out.set_holder_start_time(started);
  plan.out.set_container_id(plan.container_id);
  return Ok{};
}

Result<v1::CreateStepResponse> StepCreator::finish_join(const v1::CreateStepRequest& req, v1::CreateStepResponse joined,
                                                        const JobSite& site, PhaseClock& clock) {
  if (!site.lines.hooks.empty()) clock.begin("hooks");
  auto hook_env = p_.site.run_hooks(site, req, {joined.holder_pid(), joined.holder_start_time(), joined.container_id()});
  if (!hook_env) return hook_env.take_error();
  return finish(req, std::move(joined), site, *hook_env, SetupKind::kNamedJoin, clock);
}

v1::CreateStepResponse StepCreator::finish(const v1::CreateStepRequest& req, v1::CreateStepResponse out, const JobSite& site,
                                           const std::vector<std::string>& hook_env, SetupKind kind, PhaseClock& clock,
                                           bool named) {
  p_.site.environment(site, out);
  for (const std::string& kv : hook_env) out.add_site_env(kv);
  clock.end();
  double seconds = clock.seconds();
  for (const auto& [phase, s] : clock.laps()) metrics_.setup_phase(kind, phase, s);
  metrics_.setup_done(kind, seconds);
  auto ms = static_cast<int64_t>(seconds * 1000);
  out.set_setup_ms(static_cast<uint32_t>(ms));
  std::string what = kind == SetupKind::kNamedJoin    ? "joined named"
                     : kind == SetupKind::kSpareClaim ? "claimed spare"
                     : named                          ? "created named"
                                                      : "created";
  log_info(what + " container " + out.container_id().substr(0, 12) + " for " + slurm::step_text(req.job_id(), req.step_id()) +
           " (uid " + std::to_string(req.uid()) + ", " + out.image() + ") in " + std::to_string(ms) + " ms" +
           (clock.text().empty() ? "" : " (" + clock.text() + ")"));
  return out;
}

}  // namespace crisp
