// StepManager::import_image: crispctl import, a registry image written as a
// squashfs file laid out as enroot's import makes one (its config in /etc),
// through the same pull and credentials as a step's, into a file of the caller's.
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <optional>

#include "agent/cri/labels.h"
#include "agent/host/entrypoint.h"
#include "agent/host/squashfs_tools.h"
#include "agent/host/user_access.h"
#include "agent/host/user_rootfs.h"
#include "agent/images/credentials.h"
#include "agent/images/enroot_config.h"
#include "agent/step_manager.h"
#include "common/files.h"
#include "common/image_ref.h"
#include "common/log.h"
#include "common/passwd.h"
#include "common/strings.h"

namespace crisp {
namespace {

// Import containers are steps of job 0 from here up: no job's, and no Slurm step id comes near.
constexpr uint32_t kImportStepBase = 0xf0000000;

// enroot's files, root's, into the container's own upper layer (empty but for runc's mount points).
Status write_enroot_files(const RootOverlay& root, const ImageConfig& c) {
  EnrootImageConfig e{c.env, c.entrypoint, c.cmd, c.volumes, c.labels, c.working_dir};
  Fd upper(open((root.snapshots + "/" + root.upper).c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!upper) return fail("cannot open the container's upper layer: " + errno_text(errno));
  if (mkdirat(upper.get(), "etc", 0755) != 0 && errno != EEXIST) return fail("mkdir etc: " + errno_text(errno));
  for (const auto& [path, text] : enroot_files(e)) {
    Fd f = open_at(upper.get(), path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS);
    if (!f || write(f.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()) || fchmod(f.get(), 0644) != 0)
      return fail("cannot write " + path + ": " + errno_text(errno));
  }
  return Ok{};
}

}  // namespace

Result<StepManager::ImportContainer> StepManager::make_import_container(const StepContainerInput& in) {
  auto id = create_in_user_sandbox(in.job.uid, in.job.user, in, nullptr);
  if (!id) return id.take_error();
  ContainerGuard guard(*this, *id);
  auto pid = start_and_find_holder(*id, in.image);
  if (!pid) return pid.take_error();
  if (auto ran = await_holder(*pid, settings_.holder_exe, std::chrono::seconds(10)); !ran)
    return fail("the import's container " + ran.error());
  guard.keep();
  return ImportContainer{*id, *pid};
}

Result<v1::ImportResponse> StepManager::import_image(uint32_t uid, uint32_t gid, const std::string& image,
                                                     const std::string& path,
                                                     const PullWaiter& waiter) {
  static std::atomic<uint32_t> serial{0};
  auto t0 = std::chrono::steady_clock::now();
  auto ref = parse_image_ref(image);
  if (!ref) return ref.take_error();
  auto pw = lookup_uid(uid);
  if (!pw) return fail("uid " + std::to_string(uid) + " has no entry in the password database");
  UserCreds creds{uid, gid, {}};
  UserFiles files{creds, pw->home};
  PullWaiter user_waiter = waiter;
  user_waiter.uid = uid;
  auto config = images_.ensure(ref->canonical(), [&] {
    return credentials_for(uid == 0 ? nullptr : &files, settings_.registry_auth_file, ref->registry, ref->user);
  }, user_waiter);
  if (!config) return config.take_error();
  auto out = create_beside_as_user(creds, path);
  if (!out) return fail("crispctl import: " + out.error());
  StepContainerInput in;
  in.job = {0, uid, pw->name};
  in.step_id = kImportStepBase + serial++ % 0x0fffffff;
  in.gid = gid;
  in.stepd_pid = getpid();  // the holder goes if crispd does: the sweep removes the exited container
  in.image = ref->canonical();
  auto made = make_import_container(in);
  Status saved = made ? Status(Ok{}) : Status(made.take_error());
  std::optional<ContainerGuard> gone_after;  // the import's container goes whatever happens
  if (saved) {
    gone_after.emplace(*this, made->id);
    auto info = read_text("/proc/" + std::to_string(made->pid) + "/mountinfo", 1u << 20);
    auto root = info ? parse_root_overlay(*info) : Result<RootOverlay>(info.take_error());
    saved = root ? write_enroot_files(*root, *config) : Status(root.take_error());
    Fd ns(open(("/proc/" + std::to_string(made->pid) + "/ns/mnt").c_str(), O_RDONLY | O_CLOEXEC));
    // Root reads the image (all of it, whatever its modes); the user's file receives it.
    if (saved) saved = ns ? mksquash_as_user({0, 0, {}}, ns.get(), out->fd.get(), settings_.save_timeout)
                          : fail("cannot open the container's mount namespace: " + errno_text(errno));
  }
  gone_after.reset();
  auto bytes = finish_beside_as_user(creds, *out, path, std::move(saved));
  if (!bytes) return fail("crispctl import of " + ref->canonical() + " failed: " + bytes.error());
  v1::ImportResponse r;
  r.set_image_ref(ref->canonical());
  r.set_bytes(*bytes);
  r.set_ms(static_cast<uint32_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count()));
  log_info("imported " + ref->canonical() + " for uid " + std::to_string(uid) + " to " + path + " (" +
           std::to_string(r.bytes()) + " bytes in " + std::to_string(r.ms()) + " ms)");
  return r;
}

}  // namespace crisp
