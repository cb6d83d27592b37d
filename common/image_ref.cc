#include "common/image_ref.h"

#include <cctype>

#include "common/strings.h"

namespace crisp {
namespace {

constexpr std::string_view kDockerHub = "docker.io";

bool is_lower_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

// One path component: lowercase alphanumerics joined by '.', '_', '__' or runs of '-'.
bool valid_component(std::string_view c) {
  if (c.empty() || !is_lower_alnum(c.front()) || !is_lower_alnum(c.back())) return false;
  for (size_t i = 0; i < c.size(); ++i) {
    char ch = c[i];
    if (is_lower_alnum(ch) || ch == '-') continue;
    if (ch == '.' || ch == '_') {
      bool double_underscore = ch == '_' && c[i + 1] == '_';
      if (double_underscore) ++i;
      if (!is_lower_alnum(c[i + 1])) return false;
      continue;
    }
    return false;
  }
  return true;
}

bool valid_tag(std::string_view t) {
  if (t.empty() || t.size() > 128) return false;
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  if (!word(t.front())) return false;
  for (char c : t)
    if (!word(c) && c != '.' && c != '-') return false;
  return true;
}

bool valid_digest(std::string_view d) {
  size_t colon = d.find(':');
  if (colon == std::string_view::npos || colon == 0) return false;
  std::string_view algo = d.substr(0, colon), hex = d.substr(colon + 1);
  for (char c : algo)
    if (!is_lower_alnum(c) && c != '+' && c != '.' && c != '_' && c != '-') return false;
  if (algo == "sha256" && hex.size() != 64) return false;
  if (hex.size() < 32) return false;
  for (char c : hex)
    if (!std::isxdigit(static_cast<unsigned char>(c)) || std::isupper(static_cast<unsigned char>(c)))
      return false;
  return true;
}

// What follows '@' is meant as a digest (valid or not) when it starts with an algorithm.
bool names_a_digest(std::string_view s) {
  for (std::string_view algo : {"sha256:", "sha384:", "sha512:"})
    if (starts_with(s, algo)) return true;
  return false;
}

bool valid_registry(std::string_view r) {
  if (r.empty()) return false;
  size_t colon = r.rfind(':');
  std::string_view host = r.substr(0, colon);
  if (colon != std::string_view::npos) {
    std::string_view port = r.substr(colon + 1);
    if (port.empty() || port.size() > 5) return false;
    for (char c : port)
      if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  if (host.empty() || host.front() == '-' || host.front() == '.') return false;
  for (char c : host)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.') return false;
  return true;
}

// A first path component names a registry when it cannot be a Docker Hub user.
bool looks_like_registry(std::string_view first) {
  return first.find('.') != std::string_view::npos ||
         first.find(':') != std::string_view::npos || first == "localhost";
}

Error bad(std::string_view text, std::string_view why) {
  return fail("invalid image reference '" + std::string(text) + "': " + std::string(why) +
              " (expected [REGISTRY/]REPOSITORY[:TAG][@DIGEST] or [USER@][REGISTRY#]IMAGE[:TAG])");
}

}  // namespace

std::string ImageRef::canonical() const {
  std::string out = registry + "/" + repository;
  if (!tag.empty()) out += ":" + tag;
  if (!digest.empty()) out += "@" + digest;
  return out;
}

namespace {

// enroot's [USER@]REGISTRY#IMAGE, or USER@IMAGE: fills ref's user and registry, returns the rest.
Result<std::string_view> take_user_and_registry(std::string_view text, std::string_view rest, ImageRef& ref) {
  size_t hash = rest.find('#');
  if (hash == std::string_view::npos) {
    // USER@IMAGE without a registry: a bare user name, then '@' and no digest.
    size_t at = rest.find('@');
    if (at == std::string_view::npos || names_a_digest(rest.substr(at + 1)) ||
        rest.substr(0, at).find_first_of("/:") != std::string_view::npos)
      return rest;
    ref.user = rest.substr(0, at);
    if (ref.user.empty()) return bad(text, "the user before '@' is empty");
    return rest.substr(at + 1);
  }
  std::string_view head = rest.substr(0, hash);
  size_t at = head.find('@');
  if (at != std::string_view::npos) {
    ref.user = head.substr(0, at);
    head.remove_prefix(at + 1);
    if (ref.user.empty()) return bad(text, "the user before '@' is empty");
  }
  if (!valid_registry(head)) return bad(text, "'" + std::string(head) + "' is not a registry host[:port]");
  // Written REGISTRY/IMAGE for containerd, a bare name would be read as a Docker Hub user's.
  if (!looks_like_registry(head))
    return bad(text, "registry '" + std::string(head) + "' needs a dot or a port (" + std::string(head) +
                         ".example.com, " + std::string(head) + ":5000) or must be localhost");
  ref.registry = head;
  return rest.substr(hash + 1);
}

Result<ImageRef> parse_path(std::string_view text, std::string_view path, ImageRef ref);

}  // namespace

bool is_image_file(std::string_view text) { return !text.empty() && (text.front() == '/' || text.front() == '.'); }

Status check_image_file(std::string_view text) {
  auto bad_file = [&](const std::string& why) {
    return fail("invalid image file '" + std::string(text) + "': " + why);
  };
  if (text.find('\0') != std::string_view::npos) return bad_file("it holds a NUL byte");
  if (text.size() >= 4096) return bad_file("the path is too long");
  if (text.back() == '/' || text == "." || text == "..") return bad_file("it names a directory, not a squashfs file");
  return Ok{};
}

Result<ImageRef> parse_image_ref(std::string_view text) {
  std::string_view rest = text;
  if (starts_with(rest, "docker://")) rest.remove_prefix(9);
  if (rest.empty()) return bad(text, "it is empty");
  if (is_image_file(rest)) return bad(text, "a file is not a registry image");

  ImageRef ref;
  auto path = take_user_and_registry(text, rest, ref);
  if (!path) return path.take_error();
  return parse_path(text, *path, ref);
}

namespace {

// Tag, digest and repository of what follows the registry.
Result<ImageRef> parse_path(std::string_view text, std::string_view path, ImageRef ref) {
  size_t at = path.find('@');
  if (at != std::string_view::npos) {
    ref.digest = path.substr(at + 1);
    path = path.substr(0, at);
    if (!valid_digest(ref.digest)) return bad(text, "'" + ref.digest + "' is not a digest");
  }

  size_t last_slash = path.rfind('/');
  size_t colon = path.rfind(':');
  if (colon != std::string_view::npos && (last_slash == std::string_view::npos || colon > last_slash)) {
    ref.tag = path.substr(colon + 1);
    path = path.substr(0, colon);
    if (!valid_tag(ref.tag)) return bad(text, "'" + ref.tag + "' is not a valid tag");
  }

  std::vector<std::string> parts = split(path, '/');
  if (ref.registry.empty()) {
    if (parts.size() > 1 && looks_like_registry(parts.front())) {
      ref.registry = parts.front();
      parts.erase(parts.begin());
      if (!valid_registry(ref.registry))
        return bad(text, "'" + ref.registry + "' is not a registry host[:port]");
    } else {
      ref.registry = kDockerHub;
    }
  }
  for (const std::string& p : parts)
    if (!valid_component(p))
      return bad(text, p.empty() ? "a path component is empty"
                                 : "'" + p + "' is not a valid repository name (lowercase letters, digits, '.', '_', '-')");
  if (ref.registry == kDockerHub && parts.size() == 1) parts.insert(parts.begin(), "library");

  for (size_t i = 0; i < parts.size(); ++i) ref.repository += (i ? "/" : "") + parts[i];
  if (ref.tag.empty() && ref.digest.empty()) ref.tag = "latest";
  return ref;
}

}  // namespace

}  // namespace crisp
