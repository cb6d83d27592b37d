#include "agent/site/enroot_conf.h"

#include <array>

#include "common/strings.h"

namespace crisp {
namespace {

struct Meaning {
  std::string_view name, crisp;
};

constexpr std::string_view kEnrootsOwn = "not used: enroot's own machinery (crisp's images are containerd's)";

constexpr std::array kMeanings = {
    Meaning{"ENROOT_MOUNT_HOME", "Pyxis sets it for each job; crisp's --container-mount-home, off by default as Pyxis's"},
    Meaning{"ENROOT_REMAP_ROOT", "Pyxis sets it for each job; crisp's --container-remap-root, off by default as Pyxis's"},
    Meaning{"ENROOT_ROOTFS_WRITABLE", "Pyxis sets it for each job; crisp's root is writable unless --container-readonly"},
    Meaning{"ENROOT_ALLOW_SUPERUSER", "root's jobs run as root in their containers; --container-remap-root for others"},
    Meaning{"ENROOT_ALLOW_HTTP", "a plain-HTTP registry is named in containerd's hosts.toml (/etc/crisp/certs.d)"},
    Meaning{"ENROOT_LOGIN_SHELL", "not used: a task runs the command srun names, as with Pyxis"},
    Meaning{"ENROOT_RESTRICT_DEV", "crisp's containers get the runtime's devices and the step's GPUs and HCAs alone"},
    Meaning{"ENROOT_SQUASH_OPTIONS", "crispctl import and --container-save: crispd's --squashfs-* options"},
    Meaning{"ENROOT_MAX_PROCESSORS", "crispctl import and --container-save: crispd --squashfs-cpus"},
    Meaning{"ENROOT_MAX_CONNECTIONS", "pulls are containerd's (its max_concurrent_downloads)"},
    Meaning{"ENROOT_CONNECT_TIMEOUT", "pulls: crispd --pull-stall-timeout"},
    Meaning{"ENROOT_TRANSFER_TIMEOUT", "pulls: crispd --pull-timeout and --pull-stall-timeout"},
    Meaning{"ENROOT_TRANSFER_RETRIES", "pulls: containerd retries; crispd --pull-stall-timeout ends a stalled one"},
    Meaning{"ENROOT_CONFIG_PATH", "a user's ~/.config/enroot/.credentials is read; its mounts.d, environ.d, hooks.d are not"},
};

std::string trimmed(std::string_view s) {
  size_t a = s.find_first_not_of(" \t\r"), b = s.find_last_not_of(" \t\r");
  return a == std::string_view::npos ? "" : std::string(s.substr(a, b - a + 1));
}

}  // namespace

std::vector<std::pair<std::string, std::string>> parse_enroot_conf(std::string_view text) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::string& raw : split(text, '\n')) {
    std::string line = trimmed(raw);
    if (line.empty() || line.front() == '#' || !line.starts_with("ENROOT_")) continue;
    size_t blank = line.find_first_of(" \t");
    std::string name = line.substr(0, blank);
    std::string value = blank == std::string::npos ? "" : trimmed(std::string_view(line).substr(blank));
    out.emplace_back(std::move(name), std::move(value));
    if (out.size() == kMaxEnrootSettings) break;
  }
  return out;
}

std::string crisp_meaning_of(std::string_view name) {
  for (const Meaning& m : kMeanings)
    if (m.name == name) return std::string(m.crisp);
  return std::string(kEnrootsOwn);
}

}  // namespace crisp
