#include "spank/options.h"

#include <cstdlib>

#include "common/env.h"
#include "common/strings.h"

namespace crisp {
namespace {

Status check_workdir(const std::string& w) {
  if (w.empty() || w.front() != '/')
    return fail("invalid --container-workdir '" + w + "': it must be an absolute path inside the image");
  return Ok{};
}

}  // namespace

Status validate_option(const std::string& name, const std::string& value) {
  if (name == "container-image") {
    if (auto r = parse_image_ref(value); !r) return Error{r.error()};
  } else if (name == "container-mounts") {
    if (auto r = parse_mounts(value); !r) return Error{r.error()};
  } else if (name == "container-workdir") {
    return check_workdir(value);
  } else if (name == "container-env") {
    if (auto r = parse_env_names(value); !r) return Error{r.error()};
  }
  return Ok{};
}

Result<ContainerOptions> validate_options(const RawOptions& raw) {
  ContainerOptions out;
  if (!raw.image) {
    for (const auto& [name, v] : {std::pair{"--container-mounts", &raw.mounts}, {"--container-workdir", &raw.workdir},
                                  {"--container-env", &raw.env}})
      if (*v) out.warnings.push_back(std::string(name) + " is ignored without --container-image");
    return out;
  }
  auto image = parse_image_ref(*raw.image);
  if (!image) return Error{image.error()};
  out.active = true;
  out.image = *image;
  if (raw.mounts) {
    auto m = parse_mounts(*raw.mounts);
    if (!m) return Error{m.error()};
    out.mounts = *m;
  }
  if (raw.workdir) {
    if (auto s = check_workdir(*raw.workdir); !s) return Error{s.error()};
    out.workdir = *raw.workdir;
  }
  if (raw.env) {
    auto e = parse_env_names(*raw.env);
    if (!e) return Error{e.error()};
    out.env_names = *e;
  }
  return out;
}

Result<PluginConfig> parse_plugin_args(const std::vector<std::string>& args) {
  PluginConfig cfg;
  for (const std::string& a : args) {
    size_t eq = a.find('=');
    std::string key = a.substr(0, eq), value = eq == std::string::npos ? "" : a.substr(eq + 1);
    if (eq == std::string::npos || value.empty())
      return fail("plugstack.conf argument '" + a + "' must be key=value");
    if (key == "socket") {
      if (value.front() != '/') return fail("plugstack.conf socket= must be an absolute path");
      cfg.socket = value;
    } else if (key == "timeout") {
      char* end = nullptr;
      long t = std::strtol(value.c_str(), &end, 10);
      if (*end || t <= 0 || t > 86400) return fail("plugstack.conf timeout= must be seconds between 1 and 86400");
      cfg.timeout_s = static_cast<int>(t);
    } else {
      return fail("unknown plugstack.conf argument '" + key + "' (known: socket, timeout)");
    }
  }
  return cfg;
}

}  // namespace crisp
