// The --container-* options: raw values as Slurm hands them to the callbacks,
// and their validation, shared by every context. Pure: no SPANK calls here.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/image_ref.h"
#include "common/layout.h"
#include "common/mount_spec.h"
#include "common/result.h"

namespace crisp {

struct RawOptions {
  std::optional<std::string> image, mounts, workdir, env;
};

struct ContainerOptions {
  bool active = false;  // false: no --container-image, the step runs on the host
  ImageRef image;
  std::vector<MountSpec> mounts;
  std::string workdir;
  std::vector<std::string> env_names;
  std::vector<std::string> warnings;  // options given without an image
};

Result<ContainerOptions> validate_options(const RawOptions& raw);

// Checks one option's value alone, as its callback receives it.
Status validate_option(const std::string& name, const std::string& value);

// plugstack.conf arguments: key=value.
struct PluginConfig {
  std::string socket = kDefaultSocket;
  int timeout_s = 1800;  // covers a cold pull of a large image
};
Result<PluginConfig> parse_plugin_args(const std::vector<std::string>& args);

}  // namespace crisp
