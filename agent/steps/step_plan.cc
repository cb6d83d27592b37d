#include "agent/steps/step_plan.h"

namespace crisp {

UserCreds creds_of(const v1::CreateStepRequest& req) {
  return {req.uid(), req.gid(), {req.supplementary_gids().begin(), req.supplementary_gids().end()}};
}

StepPlan StepPlan::of(const v1::CreateStepRequest& req) {
  StepPlan plan;
  plan.named = !req.name().empty();
  // A named container of global scope belongs to no job (job 0).
  plan.scope = {plan.named && req.global_scope() ? 0 : req.job_id(), req.uid(), req.user()};
  plan.creds = creds_of(req);
  StepContainerInput& in = plan.in;
  in.job = plan.scope;
  in.step_id = req.step_id();
  in.gid = req.gid();
  in.groups = plan.creds.groups;
  in.stepd_pid = req.stepd_pid();
  in.name = req.name();
  in.readonly_rootfs = req.readonly_rootfs();
  return plan;
}

}  // namespace crisp
