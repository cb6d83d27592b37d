// CDI (Container Device Interface) specs, JSON or YAML, versions 0.3.0 to
// 1.1.0: what a vendor's devices need in a container. Pure: the caller reads
// the files (later directories win on a kind+name clash, as the spec says).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace crisp {

struct CdiDeviceNode {
  std::string path;       // in the container
  std::string host_path;  // empty: path
  std::string permissions;  // "rwm" when empty
};

struct CdiMount {
  std::string host_path;
  std::string container_path;
  std::vector<std::string> options;  // "ro" makes it read-only
};

struct CdiHook {
  std::string hook_name;  // createContainer, startContainer, ...
  std::string path;
  std::vector<std::string> args;
  std::vector<std::string> env;
  std::optional<int> timeout_s;
};

struct CdiEdits {
  std::vector<std::string> env;
  std::vector<CdiDeviceNode> device_nodes;
  std::vector<CdiMount> mounts;
  std::vector<CdiHook> hooks;
  std::vector<uint32_t> additional_gids;
};

struct CdiDevice {
  std::string name;
  CdiEdits edits;
};

struct CdiSpec {
  std::string version;
  std::string kind;  // vendor/class
  std::vector<CdiDevice> devices;
  CdiEdits edits;  // for every device of the spec
  std::string source;
};

// text is a spec as found in `source` (a .json or .yaml/.yml file name).
Result<CdiSpec> parse_cdi_spec(std::string_view text, const std::string& source);

// The spec's device for one device file: among those whose device nodes include
// host_path, the one with the fewest nodes ("0" or "GPU-<uuid>", never "all").
const CdiDevice* cdi_device_for(const CdiSpec& spec, const std::string& host_path);

}  // namespace crisp
