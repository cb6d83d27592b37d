#include "agent/images/pull_error.h"

#include "common/image_ref.h"

namespace crisp {
namespace {

std::string registry_of(const std::string& ref) {
  auto parsed = parse_image_ref(ref);
  return parsed ? parsed->registry : "of image " + ref;
}

PullFailure classify(const std::string& e) {
  auto has = [&](const char* s) { return e.find(s) != std::string::npos; };
  if (has("no space left on device")) return PullFailure::kNoSpace;
  if (has("429 Too Many Requests") || has("oomanyrequests") || has("OOMANYREQUESTS")) return PullFailure::kRateLimited;
  if (has("403 Forbidden")) return PullFailure::kForbidden;
  if (has("nauthorized") || has(" 401 ") || has("authentication required") || has("denied"))
    return PullFailure::kUnauthorized;
  if (has("x509:") || has("tls:") || has("certificate") || has("first record does not look like a TLS handshake"))
    return PullFailure::kTls;
  if (has("no such host") || has("server misbehaving") || has("Temporary failure in name resolution"))
    return PullFailure::kDns;
  if (has("not found") || has("manifest unknown") || has("NAME_UNKNOWN")) return PullFailure::kNotFound;
  if (has("connection refused") || has("i/o timeout") || has("dial tcp") || has("connection reset"))
    return PullFailure::kUnreachable;
  return PullFailure::kOther;
}

}  // namespace

const char* failure_label(PullFailure kind) {
  switch (kind) {
    case PullFailure::kNotFound: return "not_found";
    case PullFailure::kUnauthorized: return "unauthorized";
    case PullFailure::kForbidden: return "forbidden";
    case PullFailure::kRateLimited: return "rate_limited";
    case PullFailure::kTls: return "tls";
    case PullFailure::kDns: return "dns";
    case PullFailure::kUnreachable: return "unreachable";
    case PullFailure::kNoSpace: return "no_space";
    case PullFailure::kOther: return "other";
  }
  return "other";
}

PullError explain_pull_error(const std::string& ref, const std::string& cri_error, size_t retries) {
  PullFailure kind = classify(cri_error);
  std::string reg = registry_of(ref);
  switch (kind) {
    case PullFailure::kNotFound:
      return {kind, "image " + ref + " was not found in its registry: check the name and tag"};
    case PullFailure::kUnauthorized:
      return {kind, "the registry " + reg + " refused access to image " + ref +
                        " (401 Unauthorized): put credentials for it in ~/.config/enroot/.credentials (netrc) or "
                        "~/.docker/config.json"};
    case PullFailure::kForbidden:
      return {kind, "the registry " + reg + " forbids access to image " + ref +
                        " (403 Forbidden): these credentials may not pull it; ask the image's owner for access"};
    case PullFailure::kRateLimited:
      return {kind, "the registry " + reg + " is limiting pulls (429 Too Many Requests) and still was after " +
                        std::to_string(retries) + " more tries: try again later, or ask the admins for a pull-through cache"};
    case PullFailure::kTls:
      return {kind, "the registry " + reg + "'s TLS certificate is not trusted on this node (" + cri_error +
                        "): tell the admins (containerd's hosts.toml names the CA)"};
    case PullFailure::kDns:
      return {kind, "the registry " + reg + "'s name does not resolve on this node: check the image name (" + ref +
                        "), or tell the admins about the node's DNS"};
    case PullFailure::kUnreachable:
      return {kind, "cannot reach the registry " + reg + " of image " + ref + ": " + cri_error};
    case PullFailure::kNoSpace:
      return {kind, "the node ran out of disk space while pulling image " + ref +
                        ": nothing of it was kept; tell the admins (containerd's store is full)"};
    case PullFailure::kOther:
      break;
  }
  return {kind, "cannot pull image " + ref + ": " + cri_error};
}

std::string stall_line(const std::string& ref, std::chrono::seconds limit) {
  return "the registry " + registry_of(ref) + " sent nothing for " + std::to_string(limit.count()) +
         " s while pulling image " + ref + ": pull abandoned; try again later, or tell the admins if it persists";
}

}  // namespace crisp
