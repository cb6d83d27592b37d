// slurmd (job epilog): whatever of the job is still in the CRI goes now, even
// when a slurmstepd died before it could release its step.
#include "common/client.h"
#include "spank/contexts.h"
#include "spank/seam.h"

namespace crisp {

int slurmd_job_epilog(spank_t sp) {
  auto job = seam::job_id(sp);
  if (!job) {
    seam::daemon_log(job.error());
    return 0;
  }
  v1::Request req;
  req.mutable_release_job()->set_job_id(*job);
  auto r = call_agent(plugin_state().config.socket, req, std::chrono::seconds(60));
  // A node without crispd has nothing to clean; the epilog must not fail the node.
  if (!r && r.error_kind() != ErrorKind::kUnreachable)
    seam::daemon_log("releasing job " + std::to_string(*job) + ": " + r.error());
  return 0;
}

}  // namespace crisp
