// What crispd reads or names for a user, with that user's rights, never root's.
//
// The work runs in a short-lived child that takes the user's rights and passes
// back bytes or a descriptor: no thread of crispd ever carries them (a process
// of that uid could signal such a thread and so stop or kill the daemon), and
// a child the user stops, or a file that blocks (a FIFO, a hung NFS server),
// is killed at a deadline. The child is first a light one (light_child.h: the
// user's effective and file-system ids, real and saved root's); a refusal is
// asked again of a forked child with the user's ids whole.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/fd.h"
#include "common/result.h"

namespace crisp {

struct UserCreds {
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::vector<uint32_t> groups;
};

inline constexpr std::chrono::seconds kUserAccessTimeout{5};

// A small regular file, read as the user. nullopt: it does not exist or the
// user may not read it. Errors name the path: not a regular file, larger
// than max_bytes, or the deadline passed.
Result<std::optional<std::string>> read_file_as_user(const UserCreds& creds, const std::string& path,
                                                     size_t max_bytes,
                                                     std::chrono::milliseconds timeout = kUserAccessTimeout);

// What the user names by path, opened by the user (symlinks followed with
// their rights) as an O_PATH descriptor: they reached it, which is all a bind
// mount needs (what it holds keeps its permissions). The descriptor cannot
// change meaning later; path is where it was found, for messages. A missing
// path is an error of kind kNotFound.
struct UserPath {
  Fd fd;
  std::string path;
  bool is_directory = false;
};
Result<UserPath> resolve_as_user(const UserCreds& creds, const std::string& path,
                                 std::chrono::milliseconds timeout = kUserAccessTimeout);

// The same, opened for reading (O_RDONLY | O_NONBLOCK): a file only a user
// who may read it can have crispd use (a squashfs image).
Result<UserPath> open_as_user(const UserCreds& creds, const std::string& path,
                              std::chrono::milliseconds timeout = kUserAccessTimeout);

// A new file beside path (".NAME.crisp-PID-N" in its directory), created by the
// user for writing (0644, theirs), to become path by rename_as_user once whole.
// Errors name path: its directory missing, not the user's to write, path ending in "/".
Result<UserPath> create_beside_as_user(const UserCreds& creds, const std::string& path,
                                       std::chrono::milliseconds timeout = kUserAccessTimeout);
// rename(2) and unlink(2) by the user.
Status rename_as_user(const UserCreds& creds, const std::string& from, const std::string& to,
                      std::chrono::milliseconds timeout = kUserAccessTimeout);
void unlink_as_user(const UserCreds& creds, const std::string& path,
                    std::chrono::milliseconds timeout = kUserAccessTimeout);
// temp (create_beside_as_user's) once written, or not: closed; renamed over path
// by the user if written is Ok, and its size returned; else removed, and the
// error (written's, or the rename's) returned.
Result<uint64_t> finish_beside_as_user(const UserCreds& creds, UserPath& temp, const std::string& path,
                                       Status written);

// The calling process takes these ids: groups, gid, then uid, all three of each.
// For a forked child of crispd (raw system calls: glibc's wrappers would try to
// change every thread's, which the child lacks); false with errno set.
bool take_user_ids(uint32_t uid, uint32_t gid, const std::vector<uint32_t>& groups);

// The user's home directory, from the password database.
Result<std::string> home_of(uint32_t uid);

}  // namespace crisp
