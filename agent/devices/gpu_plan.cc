#include "agent/devices/gpu_plan.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <sstream>

#include "agent/devices/driver_discovery.h"
#include "agent/devices/gres.h"
#include "common/files.h"
#include "common/strings.h"

namespace crisp {
namespace {

// /dev/nvidia0 in the container for ROOT/nvidia0 on the host.
std::string inside_dev(const DeviceRoots& roots, const std::string& host) {
  if (starts_with(host, roots.dev + "/")) return "/dev" + host.substr(roots.dev.size());
  return host;
}

void add_device(GpuPlan& plan, PlannedDevice d) {
  for (const PlannedDevice& have : plan.devices)
    if (have.container_path == d.container_path) return;
  plan.devices.push_back(std::move(d));
}

void apply_edits(GpuPlan& plan, const CdiEdits& e) {
  for (const CdiDeviceNode& n : e.device_nodes)
    add_device(plan, {n.host_path.empty() ? n.path : n.host_path, n.path, n.permissions.empty() ? "rwm" : n.permissions});
  for (const CdiMount& m : e.mounts)
    plan.mounts.push_back({m.host_path, m.container_path,
                           std::find(m.options.begin(), m.options.end(), "ro") != m.options.end()});
  for (const std::string& kv : e.env) plan.env.push_back(kv);
  for (uint32_t g : e.additional_gids) plan.gids.push_back(g);
  for (const CdiHook& h : e.hooks)
    if (h.hook_name == "createContainer") plan.hooks.push_back(h);
}

}  // namespace

std::optional<GpuIdentity> nvidia_gpu_by_minor(const DeviceRoots& roots, unsigned minor) {
  std::string base = roots.proc + "/driver/nvidia/gpus";
  for (const std::string& bdf : list_dir(base)) {
    auto info = read_text(base + "/" + bdf + "/information");
    if (!info) continue;
    GpuIdentity id;
    id.bdf = bdf;
    bool found = false;
    std::istringstream lines(*info);
    for (std::string line; std::getline(lines, line);) {
      size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string key = line.substr(0, colon), value = line.substr(colon + 1);
      value.erase(0, value.find_first_not_of(" \t"));
      if (key == "Device Minor") found = value == std::to_string(minor);
      if (key == "GPU UUID") id.uuid = value;
    }
    if (found) {
      id.minor = minor;
      return id;
    }
  }
  return std::nullopt;
}

Result<std::vector<CdiSpec>> load_cdi_specs(const DeviceRoots& roots) {
  std::vector<CdiSpec> out;
  for (const std::string& dir : roots.cdi_dirs)
    for (const std::string& name : list_dir(dir)) {
      if (!name.ends_with(".json") && !name.ends_with(".yaml") && !name.ends_with(".yml")) continue;
      std::string path = dir + "/" + name;
      auto text = read_text(path);
      if (!text) return text.take_error();
      auto spec = parse_cdi_spec(*text, path);
      if (!spec) return spec.take_error();
      out.push_back(std::move(*spec));
    }
  return out;
}

Result<GpuPlan> plan_gpus(const DeviceRoots& roots, const std::string& node, const std::vector<unsigned>& indices) {
  GpuPlan plan;
  if (indices.empty()) return plan;
  auto conf = read_text(roots.gres_conf);
  if (!conf) return fail("the step has GPUs but " + conf.error());
  auto files = gres_device_files(*conf, "gpu", node);
  if (!files) return files.take_error();
  auto specs = load_cdi_specs(roots);
  if (!specs) return specs.take_error();

  std::vector<const CdiSpec*> used;
  std::vector<std::string> uuids;
  bool nvidia_fallback = false;
  for (unsigned index : indices) {
    if (index >= files->size())
      return fail("GPU index " + std::to_string(index) + " is not in " + roots.gres_conf + " (" +
                  std::to_string(files->size()) + " gpu files for node " + node + ")");
    const std::string& file = (*files)[index];
    struct stat st {};
    bool is_device = stat(file.c_str(), &st) == 0 && S_ISCHR(st.st_mode);
    std::optional<GpuIdentity> id;
    if (is_device) id = nvidia_gpu_by_minor(roots, minor(st.st_rdev));
    if (id) plan.gpu_bdfs.push_back(id->bdf);
    const CdiDevice* cdi = nullptr;
    // Specs of later directories win (the CDI spec's rule): look at them first.
    for (auto s = specs->rbegin(); s != specs->rend() && !cdi; ++s) {
      const auto& kinds = roots.gpu_cdi_kinds;
      if (!kinds.empty() && std::find(kinds.begin(), kinds.end(), s->kind) == kinds.end()) continue;
      if ((cdi = cdi_device_for(*s, file)) && std::find(used.begin(), used.end(), &*s) == used.end())
        used.push_back(&*s);
    }
    if (cdi) {
      apply_edits(plan, cdi->edits);
      continue;
    }
    if (!is_device)
      return fail("GPU device " + file + " (gres index " + std::to_string(index) + ") is not a character device");
    add_device(plan, {file, inside_dev(roots, file)});
    nvidia_fallback = nvidia_fallback || file.find("nvidia") != std::string::npos;
    uuids.push_back(id && !id->uuid.empty() ? id->uuid : std::to_string(minor(st.st_rdev)));
  }
  for (const CdiSpec* s : used) apply_edits(plan, s->edits);
  if (nvidia_fallback) {
    for (const char* ctl : {"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset"}) {
      std::string host = roots.dev + "/" + ctl;
      struct stat st {};
      if (stat(host.c_str(), &st) == 0 && S_ISCHR(st.st_mode)) add_device(plan, {host, std::string("/dev/") + ctl});
    }
    for (PlannedMount& m : discover_nvidia_driver(roots.ld_cache, roots.bin_dirs)) plan.mounts.push_back(std::move(m));
    plan.driver_mounted = true;
  }
  // Inside, only these GPUs exist: CUDA numbers them from 0.
  std::vector<std::string> visible;
  for (size_t i = 0; i < indices.size(); ++i) visible.push_back(std::to_string(i));
  plan.env.push_back("CUDA_VISIBLE_DEVICES=" + join(visible, ","));
  if (!uuids.empty()) plan.env.push_back("NVIDIA_VISIBLE_DEVICES=" + join(uuids, ","));
  return plan;
}

}  // namespace crisp
