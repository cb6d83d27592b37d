// The user as enroot's standard hooks put them in every container: entries in
// /etc/passwd and /etc/group (10-shadow.sh), the node's timezone
// (10-localtime.sh), apt kept as root (10-aptfix.sh), a home made from
// /etc/skel. Pure text builders here; user_rootfs.cc writes them, as the user,
// into the container's own layer (never the image).
#pragma once

#include <cstdint>
#include <string>

namespace crisp {

struct UserIdentity {
  uint32_t uid = 0, gid = 0;
  std::string user, group;  // the node's names
  std::string gecos, home, shell;
};

// root, nobody and the user first (the user's fields as on the node; a shell
// the image lacks becomes /bin/sh), then the image's other entries, without
// _apt (apt would switch to it, which cannot work here) and without other
// names for the same ids. A malformed image line is dropped.
std::string merged_passwd(const std::string& image_passwd, const UserIdentity& id, bool shell_in_image);
std::string merged_group(const std::string& image_group, const UserIdentity& id);

// For Debian-family images: apt stays root (under --container-remap-root).
inline constexpr const char* kAptSandboxConf = "APT::Sandbox::User \"root\";\n";

}  // namespace crisp
