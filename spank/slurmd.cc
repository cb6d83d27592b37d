// slurmd (job prolog and epilog): the prolog reads the job's options and starts
// pulling its image on each node of the allocation, before its first step; at
// the end, whatever of the job is still in the CRI goes, even when a
// slurmstepd died before it could release its step.
#include "common/client.h"
#include "common/image_ref.h"
#include "spank/contexts.h"
#include "spank/seam.h"

namespace crisp {
namespace {

// The job's options, as slurmd passes them to the prolog (SPANK_ variables).
void read_job_options(spank_t sp, std::vector<spank_option>& options) {
  const std::vector<OptionDef>& defs = option_defs();
  for (size_t i = 0; i < defs.size(); ++i)
    if (auto arg = seam::job_option(sp, options[i]))
      plugin_state().raw.values[defs[i].key] = option_value(defs[i], *arg);
}

}  // namespace

// Never fails the prolog (that would drain the node): a pull that cannot start
// here is the first step's to retry and report.
int slurmd_job_prolog(spank_t sp, std::vector<spank_option>& options) {
  read_job_options(sp, options);
  auto image = plugin_state().raw.values.find("IMAGE");
  if (image == plugin_state().raw.values.end() || image->second.empty() || is_image_file(image->second)) return 0;
  auto ref = parse_image_ref(image->second);
  auto job = seam::job_id(sp);
  auto owner = seam::job_owner(sp);
  if (!ref || !job || !owner) return 0;  // the step says what is wrong with the image
  v1::Request req;
  v1::PrefetchRequest* p = req.mutable_prefetch();
  p->set_job_id(*job);
  p->set_uid(owner->first);
  p->set_gid(owner->second);
  p->set_image(image->second);
  p->set_registry_user(ref->user);
  auto r = call_agent(plugin_state().config.socket, req, std::chrono::seconds(10));
  if (!r) {
    if (r.error_kind() != ErrorKind::kUnreachable)
      seam::daemon_log("job " + std::to_string(*job) + ": cannot start pulling " + image->second + ": " + r.error());
    return 0;
  }
  seam::daemon_log("job " + std::to_string(*job) + ": " + r->prefetch().image_ref() +
                   (r->prefetch().pulling() ? " is being pulled" : " is present"));
  return 0;
}

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
