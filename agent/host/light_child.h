// A child process for a few system calls, made without copying crispd: clone(CLONE_VM |
// CLONE_VFORK) costs tens of microseconds where fork() copies crispd's page tables and
// pays their teardown, 2–3 ms each (measured in a process of crispd's size), and a step
// needs several (its paths, its credentials file, its claim).
//
// The child shares crispd's memory while the calling thread waits, suspended, for its end:
// - it may make system calls only: no allocation, no lock, nothing that throws (a child
//   killed inside malloc would leave crispd's heap locked);
// - its real and saved ids stay root's: a process of the user could otherwise signal or trace
//   a process holding crispd's memory. A user's rights are its effective and file-system ids
//   (take_user_file_rights);
// - it has its own file-system root, working directory and umask (a copy), so it may chdir and
//   setns into a mount namespace; its descriptor table is a copy (it may close them) or, with
//   Files::kShared, crispd's own (what it opens is crispd's, and its exit closes nothing).
// Its timer kills it at the deadline where its wait is killable (a FIFO, an NFS server); a FUSE
// request its daemon has read, or a FLUSH on closing a FUSE file (a copied table's descriptors
// are closed at its exit), waits in the kernel until answered, and the caller with it, as the
// caller of a forked child waits in kill and waitpid: work that can meet a user's FUSE mount
// (a path they name) holds crispd no longer than a forked child would.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

#include "common/result.h"

namespace crisp {

// fn's value, or an error of kind kTimedOut (killed at the deadline) or another when the
// child could not be made or died.
enum class Files { kCopied, kShared };
Result<int> run_light_child(const std::function<int()>& fn, std::chrono::milliseconds timeout,
                            Files files = Files::kCopied);

// In a light child: the user's effective and file-system ids and groups, and no capability
// (none permitted either), so the kernel checks paths as the user's own process would (the
// effective uid decides whose user namespaces it is the owner of, and sysctls' modes). What
// still differs: a FUSE mount its owner made without allow_other admits only a process whose
// real ids are the owner's too; callers ask again of a forked child that takes the user's ids
// whole. false with errno set.
bool take_user_file_rights(uint32_t uid, uint32_t gid, const std::vector<uint32_t>& groups);

}  // namespace crisp
