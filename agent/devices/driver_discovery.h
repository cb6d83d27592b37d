// NVIDIA's user-space driver where no CDI spec describes it: its libraries
// from the host's ld cache and its tools from the host's bin directories,
// mounted read-only under /usr/local/nvidia/{lib64,bin}, which CUDA images
// already put in LD_LIBRARY_PATH and PATH.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "agent/devices/planned.h"

namespace crisp {

inline constexpr const char* kDriverLibDir = "/usr/local/nvidia/lib64";
inline constexpr const char* kDriverBinDir = "/usr/local/nvidia/bin";

struct CachedLibrary {
  std::string soname;  // libcuda.so.1
  std::string path;    // /usr/lib/x86_64-linux-gnu/libcuda.so.1
};

// `ldconfig -p` output: "\tlibcuda.so.1 (libc6,x86-64) => /usr/lib/.../libcuda.so.1"; 64-bit entries only.
std::vector<CachedLibrary> parse_ldconfig_listing(std::string_view text);

// The driver's libraries and tools as mounts: from the ld cache at ld_cache
// (read with `ldconfig -p -C`) and the first of bin_dirs holding each tool.
std::vector<PlannedMount> discover_nvidia_driver(const std::string& ld_cache, const std::vector<std::string>& bin_dirs);

// LD_LIBRARY_PATH and PATH with those directories added, for an image that
// lacks them (CUDA images have them already: then nothing).
std::vector<std::string> driver_path_env(const std::vector<std::string>& image_env);

}  // namespace crisp
