// RDMA devices for a step: the verbs device (/dev/infiniband/uverbsN) of each
// HCA chosen, plus rdma_cm; never umad/issm, which only management tools need
// and would let users act on the fabric. HCAs are all the node's, or those
// nearest the step's GPUs (same PCIe switch, else same NUMA node).
#pragma once

#include <string>
#include <vector>

#include "agent/devices/device_roots.h"
#include "agent/devices/planned.h"

namespace crisp {

enum class HcaPolicy { kAll, kNearestGpu };

struct Hca {
  std::string name;            // mlx5_0
  std::string pci_path;        // its device's real path under sys/devices
  int numa_node = -1;
  std::vector<std::string> verbs;  // uverbsN
  std::vector<std::string> ports;  // 1, 2
};

// The node's HCAs under roots.sys/class/infiniband, sorted by name.
std::vector<Hca> list_hcas(const DeviceRoots& roots);

// Which HCAs a step with GPUs at gpu_bdfs gets.
std::vector<Hca> choose_hcas(const DeviceRoots& roots, const std::vector<Hca>& hcas, HcaPolicy policy,
                             const std::vector<std::string>& gpu_bdfs);

struct RdmaPlan {
  std::vector<PlannedDevice> devices;
  std::vector<std::string> env;       // NCCL_IB_HCA
  std::vector<Hca> hcas;              // what /sys/class/infiniband shows inside
};

RdmaPlan plan_rdma(const DeviceRoots& roots, HcaPolicy policy, const std::vector<std::string>& gpu_bdfs);

}  // namespace crisp
