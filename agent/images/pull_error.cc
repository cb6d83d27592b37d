#include "agent/images/pull_error.h"

namespace crisp {

std::string explain_pull_error(const std::string& ref, const std::string& cri_error) {
  auto has = [&](const char* s) { return cri_error.find(s) != std::string::npos; };
  if (has("not found") || has("manifest unknown") || has("NAME_UNKNOWN"))
    return "image " + ref + " was not found in its registry: check the name and tag";
  if (has("nauthorized") || has(" 401 ") || has("authentication required") || has("denied"))
    return "the registry refused access to image " + ref + ": put credentials for its registry in ~/.config/enroot/.credentials (netrc) or ~/.docker/config.json";
  if (has("connection refused") || has("no such host") || has("i/o timeout") || has("dial tcp"))
    return "cannot reach the registry of image " + ref + ": " + cri_error;
  return "cannot pull image " + ref + ": " + cri_error;
}

}  // namespace crisp
