#include "spank/options.h"

#include <cctype>
#include <cstdlib>

#include "common/env.h"
#include "common/strings.h"

namespace crisp {
namespace {

Status check_workdir(const std::string& w) {
  // A relative one starts from the container's root, as enroot's cd does.
  if (w.empty()) return fail("invalid --container-workdir '': give a directory inside the image");
  return Ok{};
}

std::optional<bool> parse_bool(const std::string& v) {
  if (v == "1" || v == "true" || v == "yes" || v == "y") return true;
  if (v == "0" || v == "false" || v == "no" || v == "n") return false;
  return std::nullopt;
}

struct ParsedName {
  std::string name;
  NameMode mode = NameMode::kAuto;
};

Result<ParsedName> parse_name(const std::string& text) {
  ParsedName out;
  size_t colon = text.find(':');
  out.name = text.substr(0, colon);
  auto bad = [&](const std::string& why) {
    return fail("invalid --container-name '" + text + "': " + why + " (expected NAME[:auto|create|exec|no_exec])");
  };
  // It becomes a CRI label value: at most 63 characters of this set.
  if (out.name.empty() || out.name.size() > 63 || !std::isalnum(static_cast<unsigned char>(out.name.front())))
    return bad("the name must start with a letter or digit and be at most 63 characters");
  for (char c : out.name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-')
      return bad("the name may hold only letters, digits, '_', '.' and '-'");
  if (colon == std::string::npos) return out;
  std::string mode = text.substr(colon + 1);
  if (mode == "auto") out.mode = NameMode::kAuto;
  else if (mode == "create") out.mode = NameMode::kCreate;
  else if (mode == "exec") out.mode = NameMode::kExec;
  else if (mode == "no_exec") out.mode = NameMode::kNoExec;
  else return bad("unknown mode '" + mode + "'");
  return out;
}

// Pyxis 0.24's words for a bad list.
Result<unsigned> parse_unshare(const std::string& text) {
  unsigned out = 0;
  for (const std::string& n : split(text, ',')) {
    if (n.empty()) return fail("invalid --container-unshare '" + text + "': empty namespace argument");
    if (n == "net") out |= kUnshareNet;
    else if (n == "ipc") out |= kUnshareIpc;
    else if (n == "uts") out |= kUnshareUts;
    else return fail("invalid --container-unshare '" + text + "': unknown namespace '" + n + "' (expected net, ipc, uts)");
  }
  return out;
}

bool flag_on(const RawOptions& raw, const char* key) {
  auto it = raw.values.find(key);
  return it != raw.values.end() && it->second == "1";
}

// --container-writable and --container-readonly set one thing: the command
// line's choice of either leaves both variables unread.
const char* other_half(const std::string& key) {
  if (key == "WRITABLE") return "READONLY";
  if (key == "READONLY") return "WRITABLE";
  return nullptr;
}

std::optional<std::string> value_of(const RawOptions& raw, const char* key) {
  auto it = raw.values.find(key);
  if (it == raw.values.end()) return std::nullopt;
  return it->second;
}

}  // namespace

const std::vector<OptionDef>& option_defs() {
  static const std::vector<OptionDef> defs = {
      {"container-image", "IMAGE", "[USER@][REGISTRY#]IMAGE[:TAG]|REGISTRY/IMAGE[:TAG]|PATH", nullptr,
       "[crisp] the image to run the step's tasks in; a PATH starting with / or . is a squashfs file"},
      {"container-mounts", "MOUNTS", "SRC[:DST[:FLAGS]][,...]", nullptr,
       "[crisp] bind mounts into the container; SRC a path or tmpfs; FLAGS: ro, rw, [r]private, [r]slave, "
       "[r]shared joined by '+'"},
      {"container-workdir", "WORKDIR", "PATH", nullptr, "[crisp] working directory inside the container"},
      {"container-env", "ENV", "NAME[,NAME...]", nullptr,
       "[crisp] job environment variables that override the image's"},
      {"container-name", "NAME", "NAME[:auto|create|exec|no_exec]", nullptr,
       "[crisp] keep the container after the step and reuse it in later steps of the job"},
      {"container-save", "SAVE", "PATH", nullptr,
       "[crisp] when the step ends, save the container's filesystem to PATH as a squashfs image"},
      {"container-mount-home", "MOUNT_HOME", nullptr, "1", "[crisp] bind-mount your home directory"},
      {"no-container-mount-home", "MOUNT_HOME", nullptr, "0", "[crisp] do not bind-mount your home directory"},
      {"container-remap-root", "REMAP_ROOT", nullptr, "1",
       "[crisp] appear as root inside the container (an unprivileged user namespace; no extra rights)"},
      {"no-container-remap-root", "REMAP_ROOT", nullptr, "0", "[crisp] keep your own uid inside the container"},
      {"container-entrypoint", "ENTRYPOINT", nullptr, "1", "[crisp] run the image's entrypoint once per container"},
      {"no-container-entrypoint", "ENTRYPOINT", nullptr, "0", "[crisp] do not run the image's entrypoint"},
      {"container-entrypoint-log", "ENTRYPOINT_LOG", nullptr, "1", "[crisp] print the entrypoint's output"},
      {"container-writable", "WRITABLE", nullptr, "1", "[crisp] make the container's root filesystem writable"},
      {"container-readonly", "READONLY", nullptr, "1", "[crisp] make the container's root filesystem read-only"},
      {"container-unshare", "UNSHARE", "NS[,NS...]",  nullptr,
       "[crisp] private namespaces for the step: net (loopback only), ipc, uts"},
  };
  return defs;
}

std::string option_value(const OptionDef& def, const std::string& arg) { return def.arginfo ? arg : def.flag_value; }

Status validate_option(const std::string& key, const std::string& value) {
  if (key == "IMAGE") {
    if (is_image_file(value)) return check_image_file(value);
    if (auto r = parse_image_ref(value); !r) return r.take_error();
  } else if (key == "MOUNTS") {
    if (auto r = parse_mounts(value); !r) return r.take_error();
  } else if (key == "WORKDIR") {
    return check_workdir(value);
  } else if (key == "ENV") {
    if (auto r = parse_env_names(value); !r) return r.take_error();
  } else if (key == "NAME") {
    if (auto r = parse_name(value); !r) return r.take_error();
  } else if (key == "UNSHARE") {
    if (auto r = parse_unshare(value); !r) return r.take_error();
  } else if (key == "SAVE") {
    if (value.empty() || value.back() == '/')
      return fail("invalid --container-save '" + value + "': it must name a file, not a directory");
    if (value.find('\0') != std::string::npos || value.size() >= 4096)
      return fail("invalid --container-save: not a usable path");
  }
  return Ok{};
}

Status apply_environment(RawOptions& raw, const EnvLookup& lookup) {
  const RawOptions given = raw;
  for (const OptionDef& d : option_defs()) {
    const char* other = other_half(d.key);
    if (given.values.count(d.key) || (other && given.values.count(other)) || raw.values.count(d.key)) continue;
    for (const char* prefix : {"CRISP_CONTAINER_", "PYXIS_CONTAINER_"}) {
      std::string var = prefix + std::string(d.key);
      auto v = lookup(var);
      if (!v || v->empty()) continue;
      std::string value = *v;
      if (!d.arginfo) {
        auto b = parse_bool(value);
        if (!b) return fail(var + "='" + value + "' must be 1 or 0");
        value = *b ? "1" : "0";
      } else if (auto s = validate_option(d.key, value); !s) {
        return fail(s.error() + " (from " + var + ")");
      }
      raw.values[d.key] = value;
      break;
    }
  }
  return Ok{};
}

Result<ContainerOptions> validate_options(const RawOptions& raw, const PluginConfig& config) {
  ContainerOptions out;
  for (const auto& [key, value] : raw.values)
    if (auto s = validate_option(key, value); !s) return s.take_error();
  auto image = value_of(raw, "IMAGE");
  auto name = value_of(raw, "NAME");
  if (!image && !name) {
    for (const OptionDef& d : option_defs())
      if (raw.values.count(d.key) && (d.arginfo || (d.flag_value == std::string("1") && raw.values.at(d.key) == "1")))
        out.warnings.push_back("--" + std::string(d.name) + " is ignored without --container-image");
    return out;
  }
  out.active = true;
  if (image && is_image_file(*image)) out.image_file = *image;
  else if (image) out.image = *parse_image_ref(*image);
  if (name) {
    auto n = *parse_name(*name);
    out.name = n.name;
    out.mode = n.mode;
  }
  if (auto m = value_of(raw, "MOUNTS")) out.mounts = *parse_mounts(*m);
  if (auto w = value_of(raw, "WORKDIR")) out.workdir = *w;
  if (auto p = value_of(raw, "SAVE")) out.save_path = *p;
  if (auto e = value_of(raw, "ENV")) out.env_names = *parse_env_names(*e);
  out.mount_home = flag_on(raw, "MOUNT_HOME");
  out.remap_root = flag_on(raw, "REMAP_ROOT");
  if (auto u = value_of(raw, "UNSHARE")) out.unshare = *parse_unshare(*u);
  auto entrypoint = value_of(raw, "ENTRYPOINT");
  out.entrypoint = entrypoint ? *entrypoint == "1" : config.execute_entrypoint;
  out.entrypoint_log = flag_on(raw, "ENTRYPOINT_LOG");
  if (out.entrypoint_log && !out.entrypoint)
    return fail("--container-entrypoint-log needs the entrypoint to run: add --container-entrypoint");
  // Each also takes 0 (PYXIS_CONTAINER_WRITABLE=0 means read-only).
  auto writable = value_of(raw, "WRITABLE"), readonly = value_of(raw, "READONLY");
  if (writable && readonly && *writable == *readonly)
    return fail("--container-writable and --container-readonly conflict: give one of them");
  out.readonly = readonly ? *readonly == "1" : writable && *writable == "0";
  return out;
}

Result<PluginConfig> parse_plugin_args(const std::vector<std::string>& args) {
  PluginConfig cfg;
  for (const std::string& a : args) {
    size_t eq = a.find('=');
    std::string key = a.substr(0, eq), value = eq == std::string::npos ? "" : a.substr(eq + 1);
    if (eq == std::string::npos || value.empty())
      return fail("plugstack.conf argument '" + a + "' must be key=value");
    auto boolean = [&](bool& slot) -> Status {
      auto b = parse_bool(value);
      if (!b) return fail("plugstack.conf " + key + "= must be 1 or 0");
      slot = *b;
      return Ok{};
    };
    Status s = Ok{};
    if (key == "socket") {
      if (value.front() != '/') return fail("plugstack.conf socket= must be an absolute path");
      cfg.socket = value;
    } else if (key == "timeout") {
      char* end = nullptr;
      long t = std::strtol(value.c_str(), &end, 10);
      if (*end || t <= 0 || t > 86400) return fail("plugstack.conf timeout= must be seconds between 1 and 86400");
      cfg.timeout_s = static_cast<int>(t);
    } else if (key == "execute_entrypoint") {
      s = boolean(cfg.execute_entrypoint);
    } else if (key == "sbatch_support") {
      s = boolean(cfg.sbatch_support);
    } else if (key == "mount_workdir") {
      s = boolean(cfg.mount_workdir);
    } else if (key == "container_scope") {
      if (value != "job" && value != "global") return fail("plugstack.conf container_scope= must be job or global");
      cfg.global_scope = value == "global";
    } else {
      return fail("unknown plugstack.conf argument '" + key +
                  "' (known: socket, timeout, execute_entrypoint, container_scope, sbatch_support, mount_workdir)");
    }
    if (!s) return s.take_error();
  }
  return cfg;
}

}  // namespace crisp
