#include "agent/steps/step_paths.h"

#include "agent/site/site_files.h"
#include "common/mount_spec.h"
#include "common/passwd.h"
#include "common/strings.h"

namespace crisp {

v1::BindMount bind_mount(const std::string& source, const std::string& target, bool readonly) {
  v1::BindMount m;
  m.set_source(source);
  m.set_target(target);
  m.set_readonly(readonly);
  return m;
}

v1::BindMount tmpfs_mount(const std::string& target, const std::string& options) {
  v1::BindMount m;
  m.set_target(target);
  m.set_tmpfs(true);
  m.set_tmpfs_options(options);
  return m;
}

v1::BindMount bind_mount_of(const SiteMountSpec& spec) {
  v1::BindMount m = bind_mount(spec.source, spec.target, spec.readonly);
  m.set_propagation(spec.propagation);
  return m;
}

namespace {

bool at_or_under(const std::string& target, const std::string& path) {
  std::string t = normalize_path(target);
  return t == path || t.starts_with(path + "/");
}

// Erases v's elements from index i on whose mount is at or under path.
template <class T, class Mount>
void erase_under(std::vector<T>& v, size_t from, const std::string& path, Mount mount) {
  for (size_t i = v.size(); i-- > from;)
    if (at_or_under(mount(v[i]).target(), path)) v.erase(v.begin() + static_cast<std::ptrdiff_t>(i));
}

}  // namespace

bool unmount_planned(StepPlan& plan, const std::string& path, size_t binds_from, size_t tmpfs_from) {
  auto& binds = plan.user_mounts;
  auto& tmpfs = plan.tmpfs_mounts;
  auto bind_of = [](const std::pair<UserPath, v1::BindMount>& b) -> const v1::BindMount& { return b.second; };
  auto itself = [](const v1::BindMount& m) -> const v1::BindMount& { return m; };
  // runc mounts the binds in order, then the tmpfs: the top one at path is the last tmpfs there,
  // else the last bind; what was mounted under path after it goes with it (a detach).
  for (size_t i = tmpfs.size(); i-- > tmpfs_from;)
    if (normalize_path(tmpfs[i].target()) == path) {
      erase_under(tmpfs, i, path, itself);
      return true;
    }
  for (size_t i = binds.size(); i-- > binds_from;)
    if (normalize_path(binds[i].second.target()) == path) {
      erase_under(binds, i, path, bind_of);
      erase_under(tmpfs, tmpfs_from, path, itself);
      return true;
    }
  return false;
}

Status finish_unmounts(StepPlan& plan, size_t binds_from, size_t tmpfs_from) {
  for (const v1::BindMount& u : plan.pending_unmounts) {
    std::string path = normalize_path(u.target());
    if (unmount_planned(plan, path, binds_from, tmpfs_from) || u.nofail()) continue;
    return fail("--container-mounts umount:" + path + ": nothing crisp mounts is at " + path +
                " (the site's mounts, --container-mount-home's, the image's /etc/fstab's and earlier entries can be "
                "unmounted; add :nofail to go on without it)");
  }
  plan.pending_unmounts.clear();
  return Ok{};
}

// The user's own paths, resolved with their credentials: what they name must be theirs to read.
// $HOME first: enroot's hooks mount it before Pyxis's entries, which may mount over it or unmount it.
Status resolve_user_paths(const v1::CreateStepRequest& req, StepPlan& plan) {
  auto home = home_of(req.uid());
  if (home) plan.home = *home;
  if (req.mount_home()) {
    // The job's $HOME, as enroot mounts it; resolved as the user like any source.
    if (req.home().empty() && !home) return home.take_error();
    std::string path = req.home().empty() ? *home : req.home();
    auto dir = resolve_as_user(plan.creds, path);
    if (!dir) return fail("--container-mount-home: your home directory " + dir.error());
    plan.user_mounts.emplace_back(std::move(*dir), bind_mount("", req.remap_root() ? "/root" : path, false));
  }
  for (const v1::BindMount& m : req.mounts()) {
    if (m.unmount()) {
      // What is planned so far (the site's, $HOME, earlier entries); the image's come later.
      if (!unmount_planned(plan, normalize_path(m.target()), 0, 0)) plan.pending_unmounts.push_back(m);
      continue;
    }
    if (m.tmpfs()) {
      plan.tmpfs_mounts.push_back(m);
      continue;
    }
    auto src = resolve_as_user(plan.creds, m.source());
    if (!src && src.error_kind() == ErrorKind::kNotFound)
      return fail("--container-mounts: source path does not exist: " + m.source());
    if (!src) return fail("mount source " + src.error() + ": you must be able to reach it");
    plan.user_mounts.emplace_back(std::move(*src), m);
  }
  // slurmd spooled it; slurmstepd (root) vouches for the path.
  if (!req.batch_script().empty())
    plan.in.mounts.push_back(bind_mount(req.batch_script(), req.batch_script(), true));
  if (!req.job_workdir().empty()) {
    // A working directory the user cannot reach stays unmounted; slurmstepd then reports it.
    if (auto wd = resolve_as_user(plan.creds, req.job_workdir()); wd && wd->is_directory) {
      plan.in.workdir = wd->path;
      plan.in.workdir_alias = normalize_path(req.job_workdir());
      plan.workdir = std::move(*wd);
    }
  }
  return Ok{};
}

Status add_user_fstab_line(const std::string& at, std::string_view line, StepPlan& plan, size_t& added) {
  auto parsed = parse_fstab_line(line, plan.job_env);
  if (parsed && !*parsed) return Ok{};
  auto spec = parsed ? site_mount_of(**parsed, true) : Result<SiteMountSpec>(parsed.take_error());
  if (!spec) return fail(at + spec.error());
  if (++added > kMaxUserFstabMounts) return fail(at + "more than " + std::to_string(kMaxUserFstabMounts) + " mounts");
  if (spec->tmpfs) {
    plan.tmpfs_mounts.push_back(tmpfs_mount(spec->target, spec->tmpfs_options));
    return Ok{};
  }
  auto src = resolve_as_user(plan.creds, spec->source);
  if (!src && src.error_kind() == ErrorKind::kNotFound && spec->optional) return Ok{};
  if (!src && src.error_kind() == ErrorKind::kNotFound) return fail(at + "source path does not exist: " + spec->source);
  if (!src) return fail(at + "mount source " + src.error() + ": you must be able to reach it");
  plan.user_mounts.emplace_back(std::move(*src), bind_mount_of(*spec));
  return Ok{};
}

Status add_image_mounts(const std::string& fstab, const std::string& image, StepPlan& plan) {
  std::vector<std::string> lines = split(fstab, '\n');
  size_t added = 0;
  for (size_t i = 0; i < lines.size(); ++i)
    if (auto s = add_user_fstab_line("image file " + image + ": /etc/fstab:" + std::to_string(i + 1) + ": ", lines[i], plan, added); !s)
      return s;
  return Ok{};
}

}  // namespace crisp
