#include "agent/devices/rdma_plan.h"

#include <sys/stat.h>

#include <algorithm>
#include <climits>
#include <cstdlib>

#include "common/files.h"
#include "common/strings.h"

namespace crisp {
namespace {

std::string real_path(const std::string& p) {
  char buf[PATH_MAX];
  return realpath(p.c_str(), buf) ? std::string(buf) : std::string();
}

int numa_of(const std::string& device_path) {
  auto text = read_text(device_path + "/numa_node", 64);
  if (!text) return -1;
  char* end = nullptr;
  long n = std::strtol(text->c_str(), &end, 10);
  return end != text->c_str() && n >= -1 && n < 1 << 16 ? static_cast<int>(n) : -1;
}

// PCI components of a device path: /sys/devices/pci0000:00/0000:00:02.0/0000:03:00.0 -> {0000:00:02.0, 0000:03:00.0}.
std::vector<std::string> pci_chain(const std::string& path) {
  std::vector<std::string> chain;
  bool in_pci = false;
  for (const std::string& part : split(path, '/')) {
    if (starts_with(part, "pci")) {
      chain.push_back(part);  // the root complex: a shared one means the same host bridge only
      in_pci = true;
      continue;
    }
    if (in_pci && part.size() == 12 && part[4] == ':' && part[7] == ':' && part[10] == '.') chain.push_back(part);
  }
  return chain;
}

// Same PCIe switch: the two chains share the root complex, the root port and at least one switch port.
bool same_switch(const std::string& a, const std::string& b) {
  auto ca = pci_chain(a), cb = pci_chain(b);
  size_t common = 0;
  while (common < ca.size() && common < cb.size() && ca[common] == cb[common]) common++;
  return common >= 3;
}

}  // namespace

std::vector<Hca> list_hcas(const DeviceRoots& roots) {
  std::vector<Hca> out;
  std::string cls = roots.sys + "/class/infiniband";
  for (const std::string& name : list_dir(cls)) {
    Hca h;
    h.name = name;
    std::string dev = cls + "/" + name + "/device";
    h.pci_path = real_path(dev);
    h.numa_node = numa_of(dev);
    h.verbs = list_dir(dev + "/infiniband_verbs");
    h.ports = list_dir(cls + "/" + name + "/ports");
    out.push_back(h);
  }
  return out;
}

std::vector<Hca> choose_hcas(const DeviceRoots& roots, const std::vector<Hca>& hcas, HcaPolicy policy,
                             const std::vector<std::string>& gpu_bdfs) {
  if (policy == HcaPolicy::kAll || gpu_bdfs.empty()) return hcas;
  std::vector<std::string> gpu_paths;
  std::vector<int> gpu_numa;
  for (const std::string& bdf : gpu_bdfs) {
    std::string dev = roots.sys + "/bus/pci/devices/" + bdf;
    gpu_paths.push_back(real_path(dev));
    gpu_numa.push_back(numa_of(dev));
  }
  auto pick = [&](auto near) {
    std::vector<Hca> out;
    for (const Hca& h : hcas)
      for (size_t i = 0; i < gpu_paths.size(); ++i)
        if (near(h, i)) {
          out.push_back(h);
          break;
        }
    return out;
  };
  auto by_switch = pick([&](const Hca& h, size_t i) { return !gpu_paths[i].empty() && same_switch(h.pci_path, gpu_paths[i]); });
  if (!by_switch.empty()) return by_switch;
  auto by_numa = pick([&](const Hca& h, size_t i) { return h.numa_node >= 0 && h.numa_node == gpu_numa[i]; });
  // Nothing near: every HCA, rather than none.
  return by_numa.empty() ? hcas : by_numa;
}

RdmaPlan plan_rdma(const DeviceRoots& roots, HcaPolicy policy, const std::vector<std::string>& gpu_bdfs) {
  RdmaPlan plan;
  plan.hcas = choose_hcas(roots, list_hcas(roots), policy, gpu_bdfs);
  if (plan.hcas.empty()) return plan;
  std::vector<std::string> nccl;
  auto add_if_device = [&](const std::string& name) {
    std::string host = roots.dev + "/infiniband/" + name;
    struct stat st {};
    if (stat(host.c_str(), &st) == 0 && S_ISCHR(st.st_mode)) plan.devices.push_back({host, "/dev/infiniband/" + name});
  };
  for (const Hca& h : plan.hcas) {
    for (const std::string& v : h.verbs) add_if_device(v);
    for (const std::string& p : h.ports) nccl.push_back(h.name + ":" + p);
  }
  add_if_device("rdma_cm");
  if (!nccl.empty()) plan.env.push_back("NCCL_IB_HCA==" + join(nccl, ","));
  return plan;
}

}  // namespace crisp
