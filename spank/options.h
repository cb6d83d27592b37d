// The --container-* options: raw values as Slurm hands them to the callbacks
// (or as PYXIS_CONTAINER_* / CRISP_CONTAINER_* variables give them), their
// validation, and the plugstack.conf arguments. Pure: no SPANK calls here.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/image_ref.h"
#include "common/layout.h"
#include "common/mount_spec.h"
#include "common/result.h"

namespace crisp {

// One user-visible option. key names its value in RawOptions; a flag stores
// flag_value ("1", or "0" for its --no- form).
struct OptionDef {
  const char* name;     // without the leading "--"
  const char* key;      // also the variable's suffix: PYXIS_CONTAINER_<KEY>
  const char* arginfo;  // nullptr for a flag
  const char* flag_value;
  const char* usage;
};
const std::vector<OptionDef>& option_defs();
// What an option stores in RawOptions: its argument, or a flag's flag_value.
std::string option_value(const OptionDef& def, const std::string& arg);

struct RawOptions {
  std::map<std::string, std::string> values;  // by OptionDef::key
};

// --container-name's modes, as in Pyxis.
enum class NameMode { kAuto, kCreate, kExec, kNoExec };

struct PluginConfig {
  std::string socket = kDefaultSocket;
  int timeout_s = 1800;  // covers a cold pull of a large image
  bool execute_entrypoint = false;
  // container_scope=global (Pyxis's default): named containers outlive the job,
  // until their user removes them (crispctl rm NAME); job: they go with it.
  bool global_scope = true;
  bool sbatch_support = true;
  bool mount_workdir = true;  // bind-mount the job's working directory
};

struct ContainerOptions {
  bool active = false;  // false: neither image nor name, the step runs on the host
  std::optional<ImageRef> image;
  std::string image_file;  // --container-image=PATH (a squashfs file), as given
  std::vector<MountSpec> mounts;
  std::string workdir;
  std::string save_path;  // --container-save, as given
  std::vector<std::string> env_names;
  std::string name;  // empty: the container goes with the step
  NameMode mode = NameMode::kAuto;
  bool mount_home = false;
  bool remap_root = false;
  bool entrypoint = false;
  bool entrypoint_log = false;
  bool readonly = false;
  unsigned unshare = 0;  // UnshareBits (common/layout.h)
  std::vector<std::string> warnings;  // options given without an image or name
};

// Fills the options not given on the command line from CRISP_CONTAINER_<KEY>,
// then PYXIS_CONTAINER_<KEY>; the command line wins.
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;
Status apply_environment(RawOptions& raw, const EnvLookup& lookup);

Result<ContainerOptions> validate_options(const RawOptions& raw, const PluginConfig& config);

// Checks one option's value alone, as its callback receives it.
Status validate_option(const std::string& key, const std::string& value);

Result<PluginConfig> parse_plugin_args(const std::vector<std::string>& args);

}  // namespace crisp
