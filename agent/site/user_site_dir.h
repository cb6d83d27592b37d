// A user's own enroot configuration ($ENROOT_CONFIG_PATH, by default ~/.config/enroot): its
// mounts.d/*.fstab, environ.d/*.env and hooks.d/*.sh, which enroot gives each of the user's
// containers after the system's. Everything is read with the user's rights (a child with their
// ids opens each directory and file), bounded in files, bytes and time; what it names is the
// user's alone: its mounts' sources are resolved as theirs, its hooks run as them, and a line
// crisp cannot apply fails their step with one line (agent/steps/step_site.h).
#pragma once

#include <optional>
#include <string>

#include "agent/host/user_access.h"
#include "agent/site/site_config.h"
#include "agent/site/site_files.h"
#include "common/result.h"

namespace crisp {

inline constexpr size_t kMaxUserSiteFiles = 32;  // per directory

// The user's enroot configuration directory, as enroot finds it from the job's environment:
// ENROOT_CONFIG_PATH, else XDG_CONFIG_HOME/enroot, else HOME/.config/enroot; nullopt when
// none of them is an absolute path.
std::optional<std::string> user_enroot_dir(const EnvLookup& job_env);

// dir's files as SiteLines (users = true, mounts read-write unless "ro", as enroot's), added
// to out. A directory that is absent, or that the user cannot read, adds nothing.
Status read_user_enroot_dir(const UserCreds& creds, const std::string& dir, SiteLines& out);

}  // namespace crisp
