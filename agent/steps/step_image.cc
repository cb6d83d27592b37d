#include "agent/steps/step_image.h"

#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

#include "agent/cri/cri_client.h"
#include "agent/devices/driver_discovery.h"
#include "agent/images/image_store.h"
#include "agent/host/squashfs_mount.h"
#include "agent/host/squashfs_tools.h"
#include "agent/images/enroot_config.h"
#include "agent/site/site_files.h"
#include "agent/steps/step_paths.h"
#include "common/files.h"
#include "common/strings.h"

namespace crisp {

Status StepImage::resolve(const v1::CreateStepRequest& req, StepPlan& plan) {
  return req.image_file().empty() ? pull(req, plan) : open_file(req, plan);
}

Status StepImage::choose_cri_image(StepPlan& plan) {
  if (!plan.image_root && !plan.image_to_extract) return Ok{};
  auto info = cri_.status_info();
  auto image = info ? parse_sandbox_image(*info) : Result<std::string>(info.take_error());
  if (!image && !sandbox_image_.empty()) image = sandbox_image_;
  // Present as containerd's sandboxes need it: pulled as RunPodSandbox would, if it is gone.
  if (image)
    if (auto present = store_.ensure(*image); !present) image = present.take_error();
  if (!image)
    return fail("cannot find the runtime's sandbox image for a squashfs image's container: " + image.error() +
                " (containerd 2.x does not report it: give crispd --sandbox-image)");
  plan.in.cri_image = *image;
  return Ok{};
}

// The image, pulled with the user's credentials if the node lacks it, and what its config says.
// A pull is waited for only while the step is alive: scancel or Ctrl-C ends the wait.
Status StepImage::pull(const v1::CreateStepRequest& req, StepPlan& plan) {
  auto ref = parse_image_ref(req.image());
  if (!ref) return ref.take_error();
  plan.ref = *ref;
  std::string image = plan.ref.canonical();
  std::optional<UserFiles> user;
  if (plan.home) user = UserFiles{plan.creds, *plan.home};
  auto config = requests_.for_step(req, plan.ref, std::move(user), *plan.waiter);
  if (!config) return config.take_error();
  use_config(image, *config, plan);
  plan.image_id = config->id;
  if (req.entrypoint()) {
    plan.in.entrypoint = config->entrypoint;
    plan.in.env.assign(req.entrypoint_env().begin(), req.entrypoint_env().end());
  }
  return Ok{};
}

void StepImage::use_config(const std::string& image, const ImageConfig& config, StepPlan& plan) {
  plan.out.set_image(image);
  for (const std::string& e : config.env) plan.out.add_image_env(e);
  plan.out.set_image_workdir(config.working_dir);
  if (plan.driver_mounted)
    for (const std::string& e : driver_path_env(config.env)) plan.out.add_device_env(e);
  plan.in.image = image;
}

// A squashfs image the user names (Pyxis's --container-image=PATH): opened with
// their rights, checked, mounted; its Env and WorkingDir as enroot's import keeps them.
Status StepImage::open_file(const v1::CreateStepRequest& req, StepPlan& plan) {
  const std::string& path = req.image_file();
  if (path.front() != '/') return fail("image file " + path + ": crispd was not told the job's directory: give an absolute path");
  auto file = open_as_user(plan.creds, path);
  if (!file && file.error_kind() == ErrorKind::kNotFound) return fail("image file " + path + " does not exist");
  if (!file) return fail("cannot open the image file " + file.error());
  struct stat st {};
  if (fstat(file->fd.get(), &st) != 0) return fail("image file " + path + ": " + errno_text(errno));
  if (S_ISDIR(st.st_mode)) return fail("image file " + path + " is a directory, not a squashfs file");
  if (!S_ISREG(st.st_mode)) return fail("image file " + path + " is not a regular file");
  std::string head(kSquashfsSuperblockSize, '\0');
  ssize_t n = pread(file->fd.get(), head.data(), head.size(), 0);
  head.resize(n > 0 ? static_cast<size_t>(n) : 0);
  auto sb = parse_squashfs_superblock(head, static_cast<uint64_t>(st.st_size));
  if (!sb) return fail("image file " + path + ": " + sb.error());
  bool acl = fgetxattr(file->fd.get(), "system.posix_acl_access", nullptr, 0) >= 0;
  struct statfs fs {};
  if (fstatfs(file->fd.get(), &fs) != 0) return fail("image file " + path + ": " + errno_text(errno));
  std::string environment, rc, fstab;
  if (kernel_may_mount(st, acl, static_cast<int64_t>(fs.f_type), squashfs_any_owner_)) {
    auto root = mount_squashfs(file->fd.get(), path);
    if (!root) return fail("image file " + path + ": " + root.error());
    environment = read_image_file(root->get(), "/etc/environment", kImageConfigFileMax);
    rc = read_image_file(root->get(), "/etc/rc", kImageConfigFileMax);
    fstab = read_image_file(root->get(), "/etc/fstab", kImageConfigFileMax);
    plan.image_root = std::move(*root);
  } else {
    // One a user can have made: read and extracted by unsquashfs with their ids, never parsed by the kernel.
    auto read = [&](const char* name) {
      return cat_as_user(plan.creds, file->fd.get(), name, kImageConfigFileMax, std::chrono::seconds(30));
    };
    environment = read("etc/environment");
    rc = read("etc/rc");
    fstab = read("etc/fstab");
    plan.image_to_extract = std::move(file->fd);
  }
  if (auto s = add_image_mounts(fstab, path, plan); !s) return s;
  ImageConfig config;
  config.env = parse_enroot_environment(environment);
  // enroot substitutes the job's ${NAME} in the image's /etc/environment (envsubst); here in
  // each NAME=VALUE, so a value with a newline adds no variable.
  if (plan.job_env)
    for (std::string& e : config.env) e = substitute_env(e, plan.job_env);
  config.working_dir = parse_enroot_workdir(rc);
  if (req.entrypoint() && !rc.empty()) {
    std::vector<std::string> words = parse_enroot_entrypoint(rc);
    plan.file_rc = words.empty() ? "/etc/rc" : "/etc/rc (entrypoint " + join(words, " ") + ")";
  }
  use_config(path, config, plan);
  plan.in.env = config.env;
  plan.in.image_workdir = config.working_dir;
  return Ok{};
}

}  // namespace crisp
