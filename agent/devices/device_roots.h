// Where crispd finds the node's devices and their descriptions. Every root is
// a crispd flag, so the tests run the device plans on fake trees.
#pragma once

#include <string>
#include <vector>

namespace crisp {

struct DeviceRoots {
  std::string dev = "/dev";
  std::string proc = "/proc";
  std::string sys = "/sys";
  std::string gres_conf = "/etc/slurm/gres.conf";
  std::vector<std::string> cdi_dirs = {"/etc/cdi", "/var/run/cdi"};
  // The CDI kinds that describe gres "gpu" (nvidia.com/gpu, amd.com/gpu, ...); empty: any kind.
  std::vector<std::string> gpu_cdi_kinds;
  // Where NVIDIA's user-space driver is found when no CDI spec describes it.
  std::string ld_cache = "/etc/ld.so.cache";
  std::vector<std::string> bin_dirs = {"/usr/bin", "/usr/sbin", "/usr/local/bin"};
};

}  // namespace crisp
