#include "agent/steps/image_requests.h"

#include <memory>

#include "agent/images/image_store.h"
#include "agent/metrics/metrics.h"

#include "agent/steps/phase_clock.h"
#include "common/files.h"
#include "common/passwd.h"
#include "common/slurm_ids.h"

namespace crisp {

std::function<FoundCredential()> ImageRequests::credentials(std::optional<UserFiles> user, const std::string& registry,
                                                        const std::string& login) const {
  return [this, user = std::move(user), registry, login] {
    return credentials_for(user ? &*user : nullptr, node_auth_file_, registry, login);
  };
}

Result<ImageConfig> ImageRequests::for_step(const v1::CreateStepRequest& req, const ImageRef& ref,
                                            std::optional<UserFiles> user, const PullWaiter& request) {
  PullWaiter waiter = step_waiter(req, request);
  waiter.uid = req.uid();
  return store_.ensure(ref.canonical(), credentials(std::move(user), ref.registry, req.registry_user()), waiter);
}

// The request's own stop (its client left) and, every few seconds, slurmctld's word on the step.
PullWaiter ImageRequests::step_waiter(const v1::CreateStepRequest& req, const PullWaiter& request) const {
  PullWaiter w = request;
  auto last = std::make_shared<std::chrono::steady_clock::time_point>(std::chrono::steady_clock::now());
  w.stop = [this, req_stop = request.stop, last, job = req.job_id(), step = req.step_id(),
            stepd = req.stepd_pid()]() -> std::optional<std::string> {
    if (req_stop)
      if (auto why = req_stop()) return why;
    if (process_gone(stepd)) return "its slurmstepd exited";
    auto now = std::chrono::steady_clock::now();
    if (!step_liveness_ || now - *last < kLivenessEvery) return std::nullopt;
    *last = now;
    if (step_liveness_(job, step) == JobLiveness::kOver)
      return slurm::step_text(job, step) + " was cancelled while its image was pulled";
    return std::nullopt;
  };
  return w;
}

Result<v1::PrefetchResponse> ImageRequests::prefetch(const v1::PrefetchRequest& req) {
  auto ref = parse_image_ref(req.image());
  if (!ref) return ref.take_error();
  auto entry = lookup_uid(req.uid());
  if (!entry) return fail("uid " + std::to_string(req.uid()) + " has no entry in the password database");
  std::optional<UserFiles> user;
  if (!entry->home.empty()) user = UserFiles{{req.uid(), req.gid(), lookup_groups(entry->name, req.gid())}, entry->home};
  auto pulling = store_.prefetch(ref->canonical(), credentials(std::move(user), ref->registry, req.registry_user()), req.uid());
  if (!pulling) return pulling.take_error();
  metrics_.prefetched(*pulling);
  v1::PrefetchResponse out;
  out.set_image_ref(ref->canonical());
  out.set_pulling(*pulling);
  return out;
}

Result<v1::PullResponse> ImageRequests::pull(const v1::PullRequest& req, const PullWaiter& waiter) {
  auto t0 = std::chrono::steady_clock::now();
  auto ref = parse_image_ref(req.image());
  if (!ref) return ref.take_error();
  auto config = store_.ensure(ref->canonical(), credentials(std::nullopt, ref->registry, ref->user), waiter);
  if (!config) return config.take_error();
  v1::PullResponse out;
  out.set_image_ref(ref->canonical());
  out.set_ms(static_cast<uint32_t>(ms_since(t0)));
  return out;
}

Result<ImageConfig> ImageRequests::for_import(const ImageRef& ref, std::optional<UserFiles> user, const PullWaiter& waiter) {
  return store_.ensure(ref.canonical(), credentials(std::move(user), ref.registry, ref.user), waiter);
}

}  // namespace crisp
