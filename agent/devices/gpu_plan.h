// What a step's GPUs put in its container: the device files Slurm allocated
// (gres indices into gres.conf), expanded through a CDI spec that names them,
// or, without one, NVIDIA's control devices beside them; and the variables
// that make CUDA see exactly those. Every root is a setting, so tests run on
// fake trees.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "agent/devices/cdi.h"
#include "agent/devices/device_roots.h"
#include "agent/devices/planned.h"
#include "common/result.h"

namespace crisp {

struct GpuPlan {
  std::vector<PlannedDevice> devices;
  std::vector<PlannedMount> mounts;
  std::vector<std::string> env;  // NAME=VALUE, over the image's and the job's
  std::vector<uint32_t> gids;
  std::vector<CdiHook> hooks;    // createContainer hooks of the CDI specs used
  std::vector<std::string> gpu_bdfs;  // PCI addresses of the GPUs, where the driver tells
  bool driver_mounted = false;  // the driver's files are under /usr/local/nvidia
};

// The GPU of a device file as the NVIDIA driver reports it.
struct GpuIdentity {
  unsigned minor = 0;
  std::string bdf;   // PCI address, from /proc/driver/nvidia/gpus/<bdf>
  std::string uuid;  // "GPU-..." when the driver reports it
};

// Reads roots.proc/driver/nvidia/gpus/*/information for the GPU of that minor.
std::optional<GpuIdentity> nvidia_gpu_by_minor(const DeviceRoots& roots, unsigned minor);

// Loads every CDI spec under roots.cdi_dirs, in directory order.
Result<std::vector<CdiSpec>> load_cdi_specs(const DeviceRoots& roots);

// The plan for gres indices (SLURM_STEP_GPUS) on node.
Result<GpuPlan> plan_gpus(const DeviceRoots& roots, const std::string& node, const std::vector<unsigned>& indices);

}  // namespace crisp
