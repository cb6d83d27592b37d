// CDI createContainer hooks (nvidia-cdi-hook update-ldcache, create-symlinks,
// a vendor's own): run as runc would, as root with the OCI state on stdin,
// once the holder runs, so its pid and the bundle are known.
#pragma once

#include <string>

#include "agent/devices/cdi.h"
#include "common/result.h"

namespace crisp {

// The OCI state a hook reads: {"ociVersion", "id", "status", "pid", "bundle"}.
std::string oci_state_json(const std::string& container_id, int pid, const std::string& bundle);

// Runs the hook (path, with args whose first is argv[0], and env) and waits up
// to its timeout (default 30 s); fails with its exit status.
Status run_cdi_hook(const CdiHook& hook, const std::string& state_json);

}  // namespace crisp
