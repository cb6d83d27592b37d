#include "agent/labels.h"

namespace crisp::labels {

std::string step_name(uint32_t step_id) {
  switch (step_id) {
    case 0xfffffffbu: return "batch";
    case 0xfffffffcu: return "extern";
    case 0xfffffffau: return "interactive";
    default: return std::to_string(step_id);
  }
}

std::string pod_name(uint32_t job_id) { return "slurm-job-" + std::to_string(job_id); }

}  // namespace crisp::labels
