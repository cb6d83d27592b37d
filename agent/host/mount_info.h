// /proc/PID/mountinfo read as data, and what a container's bind mounts lost of
// their sources. runc 1.2 and later (containerd 2.x's) remount every bind mount
// with the options the spec gives, clearing the per-mount read-only, nosuid,
// nodev and noexec its source had on the host: a user's bind of a read-only
// host mount came out writable. crispd gives them back (source_restrictions.h). Pure.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace crisp {

struct MountInfoLine {
  std::string id, parent;
  std::string dev;          // "major:minor" of its filesystem
  std::string root;         // the directory of that filesystem mounted here
  std::string mount_point;  // relative to the root of the process whose file it is
  std::string options;      // the mount's own ("rw,nosuid,relatime")
  std::string fstype, super_options;
};

// Lines that do not parse are left out; paths are unescaped (\040 and kin).
std::vector<MountInfoLine> parse_mountinfo(const std::string& text);

// The MOUNT_ATTR_ bits among read-only, nosuid, nodev and noexec that per-mount options hold.
uint64_t restricting_attrs(const std::string& options);

// A filesystem directory (dev and root as mountinfo names them) and the restricting
// attributes of the host mount it was reached through.
struct SourceAttrs {
  std::string dev, root;
  uint64_t attrs = 0;
  bool operator==(const SourceAttrs&) const = default;
};

// Each source path (absolute, as the host's mountinfo names it), and every mount below
// it, as host (crispd's own mountinfo) shows them. A path on no mount is left out.
std::vector<SourceAttrs> source_attrs(const std::vector<MountInfoLine>& host, const std::vector<std::string>& sources);

struct LostAttrs {
  std::string mount_point;
  uint64_t attrs = 0;  // those to set again
  bool operator==(const LostAttrs&) const = default;
};

// The container's mounts of those sources that lack a restriction their source had (a
// directory reached through two host mounts keeps the restrictions of both).
std::vector<LostAttrs> lost_attrs(const std::vector<MountInfoLine>& container, const std::vector<SourceAttrs>& sources);

// Whether making paths (absolute and normal, in this order) in a namespace with these mounts
// looks names up only in filesystems that cannot wait on anyone: the container's root overlay
// and the kernel's own (tmpfs, proc, sysfs, ...), every mount at or above each path being one.
// A path at or below an earlier one is not: what will be mounted there may be a user's FUSE
// mount or a network filesystem, whose lookups can block without end.
bool made_on_local_mounts(const std::vector<MountInfoLine>& mounts, const std::vector<std::string>& paths);

}  // namespace crisp
