#include "agent/steps/image_importer.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "agent/cri/snapshot_client.h"
#include "agent/host/squashfs_tools.h"
#include "agent/host/user_access.h"
#include "agent/host/user_rootfs.h"
#include "agent/images/enroot_config.h"
#include "agent/steps/phase_clock.h"
#include "common/files.h"
#include "common/image_ref.h"
#include "common/log.h"
#include "common/passwd.h"
#include "common/strings.h"

namespace crisp {
namespace {

// A root-only directory of crispd's for one import: e/ holds enroot's files, m/ is
// where the child mounts the image; removed whole when the import ends.
class ImportStage {
 public:
  static Result<ImportStage> make(const std::string& base) {
    if (mkdir(base.c_str(), 0700) != 0 && errno != EEXIST) return fail("cannot create " + base + ": " + errno_text(errno));
    std::string pattern = base + "/import-XXXXXX";
    if (!mkdtemp(pattern.data())) return fail("cannot create a directory in " + base + ": " + errno_text(errno));
    ImportStage stage(pattern);
    for (const char* sub : {"/e", "/e/etc", "/m"})
      if (mkdir((pattern + sub).c_str(), 0755) != 0) return fail("cannot create " + pattern + sub + ": " + errno_text(errno));
    return stage;
  }
  ImportStage(ImportStage&& o) noexcept : dir_(std::move(o.dir_)) { o.dir_.clear(); }
  ImportStage& operator=(ImportStage&&) = delete;
  ~ImportStage() {
    std::error_code ignored;  // crispd's own files alone: nothing to follow
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
  }
  const std::string& dir() const { return dir_; }

 private:
  explicit ImportStage(std::string dir) : dir_(std::move(dir)) {}
  std::string dir_;
};

// enroot's files, root's, in crispd's own directory laid over the image.
Status write_enroot_files(const std::string& top, const ImageConfig& c) {
  EnrootImageConfig e{c.env, c.entrypoint, c.cmd, c.volumes, c.labels, c.working_dir};
  Fd dir(open(top.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dir) return fail("cannot open " + top + ": " + errno_text(errno));
  for (const auto& [path, text] : enroot_files(e)) {
    Fd f = open_at(dir.get(), path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK,
                   RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS);
    if (!f || write(f.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()) || fchmod(f.get(), 0644) != 0)
      return fail("cannot write " + path + ": " + errno_text(errno));
  }
  return Ok{};
}

}  // namespace

Status ImageImporter::squash_image(const ImageConfig& config, int out) {
  if (!snapshots_ || config.chain_id.empty())
    return fail("containerd does not say where the image's layers are (no snapshot service or chain id)");
  auto view = snapshots_->view(config.chain_id, bounds_.timeout + std::chrono::minutes(5));
  if (!view) return fail("cannot view the image's layers: " + view.error());
  auto layers = overlay_of_snapshot(view->mounts(), true);
  if (!layers) return layers.take_error();
  if (auto s = check_snapshots_dir(layers->snapshots); !s) return s;
  auto stage = ImportStage::make(stage_dir_);
  if (!stage) return stage.take_error();
  if (auto s = write_enroot_files(stage->dir() + "/e", config); !s) return s;
  return mksquash_layers({layers->snapshots, layers->lower, stage->dir() + "/e", stage->dir() + "/m"}, out,
                         bounds_);
}

Result<v1::ImportResponse> ImageImporter::import(uint32_t uid, uint32_t gid, const std::string& image,
                                                 const std::string& path, const PullWaiter& waiter) {
  auto t0 = std::chrono::steady_clock::now();
  auto ref = parse_image_ref(image);
  if (!ref) return ref.take_error();
  auto pw = lookup_uid(uid);
  if (!pw) return fail("uid " + std::to_string(uid) + " has no entry in the password database");
  auto slot = slots_.take(uid);  // before the pull: a pull for an import is the import's
  if (!slot) return fail(ErrorKind::kRefused, "crispctl import refused: " + slot.error());
  UserCreds creds{uid, gid, {}};
  std::optional<UserFiles> files;
  if (uid != 0) files = UserFiles{creds, pw->home};
  PullWaiter user_waiter = waiter;
  user_waiter.uid = uid;
  auto config = requests_.for_import(*ref, std::move(files), user_waiter);
  if (!config) return config.take_error();
  auto out = create_beside_as_user(creds, path);
  if (!out) return fail("crispctl import: " + out.error());
  auto bytes = finish_beside_as_user(creds, *out, path, squash_image(*config, out->fd.get()));
  if (!bytes) return fail("crispctl import of " + ref->canonical() + " failed: " + bytes.error());
  v1::ImportResponse r;
  r.set_image_ref(ref->canonical());
  r.set_bytes(*bytes);
  r.set_ms(static_cast<uint32_t>(ms_since(t0)));
  log_info("imported " + ref->canonical() + " for uid " + std::to_string(uid) + " to " + path + " (" +
           std::to_string(r.bytes()) + " bytes in " + std::to_string(r.ms()) + " ms)");
  return r;
}

}  // namespace crisp
