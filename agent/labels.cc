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

std::string user_pod_name(uint32_t uid) { return "user-" + std::to_string(uid); }

}  // namespace crisp::labels
