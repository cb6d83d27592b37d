// The step's own paths (mount sources, $HOME, the working directory), resolved with the
// user's credentials: what they name must be theirs to reach. The "paths" phase of a create.
// Calls: agent/host/user_access.h.
#pragma once

#include <string_view>

#include "agent/steps/step_plan.h"

namespace crisp {

// A bind mount of the step's container.
v1::BindMount bind_mount(const std::string& source, const std::string& target, bool readonly);
// A bind mount of a site or image fstab line (site_files.h).
v1::BindMount bind_mount_of(const SiteMountSpec& spec);
// A fresh tmpfs of the user's at target (options checked by the host phase).
v1::BindMount tmpfs_mount(const std::string& target, const std::string& options);

Status resolve_user_paths(const v1::CreateStepRequest& req, StepPlan& plan);

// --container-mounts umount:path (Pyxis's, which enroot detaches): the top planned mount at
// path, among the binds from binds_from and the tmpfs from tmpfs_from on, is not mounted, nor
// what was mounted under path after it; false: none there. resolve_user_paths applies it to
// what was planned before the entry (the site's mounts, $HOME, earlier entries) and keeps
// one that finds none in plan.pending_unmounts; finish_unmounts tries those on the image's
// /etc/fstab mounts (planned from the given indexes on), and fails the step for one that
// still finds none, unless it says nofail.
bool unmount_planned(StepPlan& plan, const std::string& path, size_t binds_from, size_t tmpfs_from);
Status finish_unmounts(StepPlan& plan, size_t binds_from, size_t tmpfs_from);

// One fstab line of the user's own (an image's /etc/fstab, their enroot configuration's
// mounts.d; the job's ${NAME} substituted), its place in messages "at" ("FILE:LINE: "): a bind
// mount, read-write unless "ro", with its source resolved as the user's own mounts are (it is
// theirs: it gets nothing they could not mount themselves), or a tmpfs. A missing source fails
// the step unless "nofail"; so does a line crisp cannot apply. added counts the mounts the
// user's lines made (at most kMaxUserFstabMounts).
inline constexpr size_t kMaxUserFstabMounts = 128;
Status add_user_fstab_line(const std::string& at, std::string_view line, StepPlan& plan, size_t& added);
// An enroot image's /etc/fstab (enroot's doc/image-format.md), each line as above.
Status add_image_mounts(const std::string& fstab, const std::string& image, StepPlan& plan);

}  // namespace crisp
