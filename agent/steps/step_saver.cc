#include "agent/steps/step_saver.h"

#include <fcntl.h>

#include <cerrno>
#include <chrono>

#include "agent/cri/cri_client.h"
#include "agent/cri/labels.h"
#include "agent/cri/spec_builder.h"
#include "agent/host/user_access.h"
#include "agent/host/user_rootfs.h"
#include "agent/steps/phase_clock.h"
#include "common/log.h"
#include "common/slurm_ids.h"
#include "common/strings.h"

namespace crisp {

Result<v1::SaveStepResponse> StepSaver::save(const v1::SaveStepRequest& req) {
  auto t0 = std::chrono::steady_clock::now();
  // slurmstepd names its own container; the labels must agree that it is the user's.
  auto status = cri_.container_status(req.container_id(), true);
  if (!status) return fail("cannot find the step's container to save it: " + status.error());
  const auto& labels = status->status().labels();
  if (labels::value_of(labels, labels::kManaged) != "true" || labels::number_of(labels, labels::kUid) != req.uid())
    return fail("the container " + req.container_id().substr(0, 12) + " is not this step's");
  auto pid = parse_container_pid({status->info().begin(), status->info().end()});
  if (!pid) return fail("the step's container is not running: " + pid.error());
  // Only runc's namespace: one the user's process made is theirs to shape.
  auto ns = runc_mount_ns(*pid);
  if (!ns) return fail("--container-save: " + ns.error());
  UserCreds creds{req.uid(), req.gid(), {req.supplementary_gids().begin(), req.supplementary_gids().end()}};
  auto out = create_beside_as_user(creds, req.path());
  if (!out) return fail("--container-save: " + out.error());
  auto bytes = finish_beside_as_user(creds, *out, req.path(),
                                     mksquash_as_user(creds, ns->get(), out->fd.get(), bounds_));
  if (!bytes) return fail("--container-save to " + req.path() + " failed: " + bytes.error());
  v1::SaveStepResponse r;
  r.set_bytes(*bytes);
  r.set_ms(static_cast<uint32_t>(ms_since(t0)));
  log_info("saved the container of " + slurm::step_text(req.job_id(), req.step_id()) + " (uid " +
           std::to_string(req.uid()) + ") to " + req.path() + ": " + std::to_string(r.bytes()) + " bytes in " +
           std::to_string(r.ms()) + " ms");
  return r;
}

}  // namespace crisp
