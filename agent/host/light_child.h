// A child process for a few system calls, made without copying crispd: clone(CLONE_VM |
// CLONE_VFORK) costs tens of microseconds where fork() copies crispd's page tables and
// pays their teardown, 2–3 ms each (measured in a process of crispd's size), and a step
// needs several (its paths, its credentials file, its claim).
//
// The child shares crispd's memory while the calling thread waits, suspended, for its end:
// - it may make system calls only: no allocation, no lock, nothing that throws (a child
//   killed inside malloc would leave crispd's heap locked);
// - it must never take another uid: a process of the user could then signal or trace a
//   process holding crispd's memory. A user's rights are taken as file-system ids only
//   (take_user_file_rights), its real, effective and saved ids staying root's;
// - it has its own descriptor table, file-system root and working directory (a copy), so
//   it may close descriptors, chdir and setns into a mount namespace.
// Its timer kills it at the deadline (a hung FUSE or NFS request ends with it).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

#include "common/result.h"

namespace crisp {

// fn's value, or an error of kind kTimedOut (killed at the deadline) or another when the
// child could not be made or died.
Result<int> run_light_child(const std::function<int()>& fn, std::chrono::milliseconds timeout);

// In a light child: the user's file-system ids and groups, and no capability in effect
// (none permitted either), so the kernel checks every path as the user's own process would.
// The one difference: a FUSE mount its owner made without allow_other refuses it (FUSE
// compares the real and effective ids); callers try such a refusal again with a forked child
// that takes the user's ids whole. false with errno set.
bool take_user_file_rights(uint32_t uid, uint32_t gid, const std::vector<uint32_t>& groups);

}  // namespace crisp
