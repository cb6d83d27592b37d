#include "agent/cri/labels.h"

#include <charconv>

namespace crisp::labels {

uint32_t number(const std::string& text) {
  uint32_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  return ec == std::errc() && end == text.data() + text.size() ? v : 0;
}

std::string user_pod_name(uint32_t uid) { return "user-" + std::to_string(uid); }

}  // namespace crisp::labels
