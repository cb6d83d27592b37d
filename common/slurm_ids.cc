#include "common/slurm_ids.h"

namespace crisp::slurm {

std::string step_name(uint32_t step_id) {
  switch (step_id) {
    case kBatchStep: return "batch";
    case kExternStep: return "extern";
    case kInteractiveStep: return "interactive";
    default: return std::to_string(step_id);
  }
}

std::string step_text(uint32_t job_id, uint32_t step_id) {
  return "job " + std::to_string(job_id) + " step " + step_name(step_id);
}

}  // namespace crisp::slurm
