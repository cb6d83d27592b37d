#include "agent/driver_discovery.h"

#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <sstream>

#include "agent/log.h"
#include "common/strings.h"

extern char** environ;

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
  int out[2];
  if (pipe(out) != 0) return {};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&fa, out[0]);
  const char* argv[] = {"/sbin/ldconfig", "-p", "-C", ld_cache.c_str(), nullptr};
  pid_t pid = 0;
  int rc = posix_spawn(&pid, argv[0], &fa, nullptr, const_cast<char**>(argv), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(out[1]);
  std::string text;
  if (rc == 0) {
    char buf[4096];
    for (ssize_t n; (n = read(out[0], buf, sizeof buf)) != 0;) {
      if (n < 0) {
        if (errno == EINTR) continue;
        break;
      }
      text.append(buf, static_cast<size_t>(n));
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) text.clear();
  } else {
    log_warn("cannot run ldconfig: " + errno_text(rc));
  }
  close(out[0]);
  return text;
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
    std::string value = fallback;
    for (const std::string& kv : image_env)
      if (starts_with(kv, name + "=")) value = kv.substr(name.size() + 1);
    for (const std::string& part : split(value, ':'))
      if (part == dir) return;
    out.push_back(name + "=" + (value.empty() ? std::string(dir) : value + ":" + dir));
  };
  with("LD_LIBRARY_PATH", kDriverLibDir, "");
  with("PATH", kDriverBinDir, "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
  return out;
}

}  // namespace crisp
