// Entering a step's container: its namespaces (the holder's mount namespace,
// or the step's keeper's with those the response names), held open from
// slurmstepd so every task joins the same ones, else opened by each task.
#pragma once

#include <cstdint>

#include "common/fd.h"
#include "common/result.h"
#include "crisp.pb.h"
#include "spank/held_ns.h"

namespace crisp {

// Opens the holder's mount namespace. Its pid and start time (as crispd read
// them) name the holder alone, never a process that got its pid after it
// exited; start_time 0 (an older crispd): only its executable is checked.
Result<Fd> open_holder_mount_ns(int holder_pid, uint64_t start_time, const char* holder_path_inside);

// setns() into it, then no_new_privs so setuid files in the image grant nothing.
Status join_mount_ns(int ns_fd);

// /proc/PID/ns/NAME of a step's namespace keeper; open it before open_holder_mount_ns
// of the same pid, whose check of the process then covers this descriptor too.
Result<Fd> open_process_ns(int pid, const char* name);
// setns() into one (what: "network", "user", ... for the message).
Status enter_ns(int ns_fd, const char* what);

// What a step's tasks enter, as crispd's response names it.
struct StepNamespaces {
  HeldNs mnt;                  // the step's own (its keeper's), else the holder's
  HeldNs user, net, ipc, uts;  // the keeper's, as the response asks (--container-unshare)
  // Opened from the keeper's (else the holder's) pid, checked with its start time.
  static Result<StepNamespaces> open(const v1::CreateStepResponse& c, const char* holder_path_inside);
  // Whether each one opened is in this process's descriptor table as opened.
  bool held_here() const;
};

}  // namespace crisp
