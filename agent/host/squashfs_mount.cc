#include "agent/host/squashfs_mount.h"

#include <fcntl.h>
#include <linux/loop.h>
#include <linux/openat2.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/xattr.h>

#include <cerrno>
#include <cstring>

#include "common/files.h"
#include "common/strings.h"

namespace crisp {
namespace {

uint64_t little_endian(const std::string& b, size_t at, size_t bytes) {
  uint64_t v = 0;
  for (size_t i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(b[at + i])) << (8 * i);
  return v;
}

constexpr uint32_t kMagic = 0x73717368;  // "hsqs" on disk
constexpr int kLoopAttempts = 16;        // another process may take the free device first

// A free loop device reading file, read-only, freed with its last user.
Result<std::pair<Fd, std::string>> attach_loop(int file, const std::string& path) {
  Fd control(open("/dev/loop-control", O_RDWR | O_CLOEXEC));
  if (!control) return fail("cannot open /dev/loop-control: " + errno_text(errno));
  for (int attempt = 0; attempt < kLoopAttempts; ++attempt) {
    int n = ioctl(control.get(), LOOP_CTL_GET_FREE);
    if (n < 0) return fail("no free loop device: " + errno_text(errno));
    std::string dev = "/dev/loop" + std::to_string(n);
    Fd loop(open(dev.c_str(), O_RDWR | O_CLOEXEC));
    if (!loop) return fail("cannot open " + dev + ": " + errno_text(errno));
    loop_config config{};
    config.fd = static_cast<uint32_t>(file);
    config.info.lo_flags = LO_FLAGS_READ_ONLY | LO_FLAGS_AUTOCLEAR;
    std::strncpy(reinterpret_cast<char*>(config.info.lo_file_name), path.c_str(), LO_NAME_SIZE - 1);
    if (ioctl(loop.get(), LOOP_CONFIGURE, &config) == 0) return std::pair{std::move(loop), dev};
    if (errno != EBUSY) return fail("cannot attach " + dev + " to the image: " + errno_text(errno));
  }
  return fail("every free loop device was taken by another process first");
}

}  // namespace

Result<SquashfsSuperblock> parse_squashfs_superblock(const std::string& head, uint64_t file_size) {
  if (head.size() < kSquashfsSuperblockSize || little_endian(head, 0, 4) != kMagic)
    return fail("it is not a squashfs image (make one with mksquashfs or crispctl import)");
  SquashfsSuperblock sb;
  sb.block_size = static_cast<uint32_t>(little_endian(head, 12, 4));
  sb.compression = static_cast<uint16_t>(little_endian(head, 20, 2));
  uint64_t block_log = little_endian(head, 22, 2), major = little_endian(head, 28, 2);
  sb.bytes_used = little_endian(head, 40, 8);
  if (major != 4) return fail("it is a squashfs of version " + std::to_string(major) + "; the kernel reads version 4");
  if (block_log < 12 || block_log > 20 || sb.block_size != (1u << block_log))
    return fail("its squashfs superblock is damaged (block size " + std::to_string(sb.block_size) + ")");
  if (sb.bytes_used < kSquashfsSuperblockSize || sb.bytes_used > file_size)
    return fail("it is truncated: the squashfs needs " + std::to_string(sb.bytes_used) + " bytes, the file has " +
                std::to_string(file_size));
  return sb;
}

bool kernel_may_mount(const struct stat& st, bool has_acl, int64_t fs_magic, bool any_owner) {
  constexpr int64_t kOverlay = 0x794c7630, kFuse = 0x65735546, kSquashfs = 0x73717368, kErofs = 0xE0F5E1E2;
  bool owners_mean_nothing = fs_magic == kOverlay || fs_magic == kFuse || fs_magic == kSquashfs || fs_magic == kErofs;
  return any_owner || (st.st_uid == 0 && (st.st_mode & (S_IWGRP | S_IWOTH)) == 0 && !has_acl && !owners_mean_nothing);
}

Result<Fd> mount_squashfs(int file, const std::string& path) {
  auto loop = attach_loop(file, path);
  if (!loop) return loop.take_error();
  Fd fs(fsopen("squashfs", FSOPEN_CLOEXEC));
  if (!fs) return fail("this kernel has no squashfs: " + errno_text(errno));
  // "ro" before the device is opened: a read-only loop device refuses a writer.
  if (fsconfig(fs.get(), FSCONFIG_SET_FLAG, "ro", nullptr, 0) != 0 ||
      fsconfig(fs.get(), FSCONFIG_SET_STRING, "source", loop->second.c_str(), 0) != 0 ||
      fsconfig(fs.get(), FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) != 0)
    return fail("the kernel cannot read it as squashfs (" + errno_text(errno) +
                                         "): damaged, or compressed in a way this kernel lacks");
  Fd mnt(fsmount(fs.get(), FSMOUNT_CLOEXEC, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV));
  if (!mnt) return fail("cannot mount the squashfs: " + errno_text(errno));
  // The superblock holds the loop device now; closing ours lets autoclear free it with the mount.
  return mnt;
}

std::string read_image_file(int image_root, const std::string& path, size_t max_bytes) {
  Fd fd = open_at(image_root, path, O_RDONLY | O_NONBLOCK | O_NOCTTY, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
  struct stat st {};
  if (!fd || fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return "";
  auto text = read_up_to(fd.get(), max_bytes);
  return text ? *text : "";
}

}  // namespace crisp
