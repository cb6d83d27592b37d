#include "agent/devices/driver_discovery.h"

#include <sys/stat.h>

#include <array>
#include <sstream>

#include "common/env.h"
#include "common/log.h"
#include "common/strings.h"
#include "common/subprocess.h"

namespace crisp {
namespace {

// The libraries of NVIDIA's driver that CUDA, NVML and OpenCL programs load.
constexpr std::array<std::string_view, 12> kLibraries = {
    "libcuda.so",          "libcudadebugger.so",        "libnvidia-ml.so",       "libnvidia-ptxjitcompiler.so",
    "libnvidia-nvvm.so",   "libnvidia-cfg.so",          "libnvidia-opencl.so",   "libnvidia-gpucomp.so",
    "libnvidia-allocator.so", "libnvidia-pkcs11.so",    "libnvidia-fatbinaryloader.so", "libnvidia-compiler.so"};
constexpr std::array<const char*, 5> kTools = {"nvidia-smi", "nvidia-debugdump", "nvidia-persistenced",
                                               "nvidia-cuda-mps-control", "nvidia-cuda-mps-server"};

// Runs ldconfig -p on the cache; empty when it fails (no cache: nothing to mount).
std::string ldconfig_listing(const std::string& ld_cache) {
  ProcessSpec spec;
  spec.argv = {"/sbin/ldconfig", "-p", "-C", ld_cache};
  spec.timeout = std::chrono::seconds(10);
  spec.max_output = 16 << 20;
  auto r = run_process(spec);
  if (!r) log_warn("cannot list the ld cache " + ld_cache + ": " + r.error());
  return r && r->succeeded() ? r->out : std::string();
}

}  // namespace

std::vector<CachedLibrary> parse_ldconfig_listing(std::string_view text) {
  std::vector<CachedLibrary> out;
  std::istringstream in{std::string(text)};
  for (std::string line; std::getline(in, line);) {
    size_t arrow = line.find(" => ");
    size_t paren = line.find(" (");
    if (arrow == std::string::npos || paren == std::string::npos || paren > arrow) continue;
    std::string flags = line.substr(paren + 2, line.find(')', paren) - paren - 2);
    if (flags.find("x86-64") == std::string::npos && flags.find("64bit") == std::string::npos) continue;
    size_t start = line.find_first_not_of(" \t");
    out.push_back({line.substr(start, paren - start), line.substr(arrow + 4)});
  }
  return out;
}

std::vector<PlannedMount> discover_nvidia_driver(const std::string& ld_cache, const std::vector<std::string>& bin_dirs) {
  std::vector<PlannedMount> mounts;
  for (const CachedLibrary& lib : parse_ldconfig_listing(ldconfig_listing(ld_cache))) {
    bool wanted = false;
    for (std::string_view name : kLibraries)
      // libcuda.so.1 and libcuda.so.550.54, not libcuda.so itself (a development link).
      wanted = wanted || (starts_with(lib.soname, std::string(name) + ".") && lib.soname.size() > name.size() + 1);
    bool seen = false;
    for (const PlannedMount& m : mounts) seen = seen || m.container_path == std::string(kDriverLibDir) + "/" + lib.soname;
    if (wanted && !seen) mounts.push_back({lib.path, std::string(kDriverLibDir) + "/" + lib.soname, true});
  }
  for (const char* tool : kTools)
    for (const std::string& dir : bin_dirs) {
      std::string path = dir + "/" + tool;
      struct stat st {};
      if (stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
        mounts.push_back({path, std::string(kDriverBinDir) + "/" + tool, true});
        break;
      }
    }
  return mounts;
}

std::vector<std::string> driver_path_env(const std::vector<std::string>& image_env) {
  std::vector<std::string> out;
  auto with = [&](const std::string& name, const char* dir, const std::string& fallback) {
    std::string value = env_value(image_env, name).value_or(fallback);
    for (const std::string& part : split(value, ':'))
      if (part == dir) return;
    out.push_back(name + "=" + (value.empty() ? std::string(dir) : value + ":" + dir));
  };
  with("LD_LIBRARY_PATH", kDriverLibDir, "");
  with("PATH", kDriverBinDir, std::string(kDefaultPath));
  return out;
}

}  // namespace crisp
