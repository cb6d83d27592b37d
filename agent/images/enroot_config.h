// The image configuration enroot's import stores inside a squashfs image, as
// files of its top layer: /etc/environment (the image's Env, a NAME=VALUE a
// line) and /etc/rc (a script that enters the WorkingDir, then execs the
// entrypoint). Pure: the texts come from the mounted image, written by whoever
// made it, so nothing here trusts them.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace crisp {

// NAME=VALUE lines, in order; comments, blank lines and anything that is not
// NAME=... are dropped (as enroot does), at most kMaxImageEnv of them.
inline constexpr size_t kMaxImageEnv = 4096;
std::vector<std::string> parse_enroot_environment(const std::string& text);

// What enroot's import writes for an image's config (its docker::configure):
// path under the root -> content.
struct EnrootImageConfig {
  std::vector<std::string> env, entrypoint, cmd, volumes;
  std::vector<std::pair<std::string, std::string>> labels;
  std::string working_dir;
};
std::vector<std::pair<std::string, std::string>> enroot_files(const EnrootImageConfig& config);

// A word quoted for sh as bash's ${word@Q} does: 'word', a ' inside as '\''.
std::string shell_quote(const std::string& word);

// The entrypoint of /etc/rc's `exec ENTRYPOINT... "$@"` (words quoted as bash's
// @Q quotes them); empty when the image has none or the line is not enroot's.
std::vector<std::string> parse_enroot_entrypoint(const std::string& rc);

// The absolute directory of /etc/rc's `cd "DIR" && unset OLDPWD || exit 1`;
// empty when there is none (a squashfs not made by enroot).
std::string parse_enroot_workdir(const std::string& rc);

}  // namespace crisp
