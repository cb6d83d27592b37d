#include "agent/devices/cdi.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>

namespace crisp {
namespace {

using nlohmann::json;

// What the README promises: 0.3.0 to 1.1.0.
constexpr std::array<std::string_view, 8> kVersions = {"0.3.0", "0.4.0", "0.5.0", "0.6.0",
                                                       "0.7.0", "0.8.0", "1.0.0", "1.1.0"};

// YAML is read into the same tree as JSON, so one reader serves both.
json from_yaml(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: {
      json o = json::object();
      for (const auto& kv : n) o[kv.first.as<std::string>()] = from_yaml(kv.second);
      return o;
    }
    case YAML::NodeType::Sequence: {
      json a = json::array();
      for (const auto& v : n) a.push_back(from_yaml(v));
      return a;
    }
    case YAML::NodeType::Scalar: {
      const std::string& s = n.Scalar();
      if (n.Tag() != "!" ) {  // unquoted: numbers are numbers
        char* end = nullptr;
        long long v = std::strtoll(s.c_str(), &end, 0);
        if (!s.empty() && end && !*end) return v;
      }
      return s;
    }
    default: return nullptr;
  }
}

struct Reader {
  const std::string& source;
  Error error(const std::string& where, const std::string& what) const {
    return fail("CDI spec " + source + ": " + where + ": " + what);
  }
  Result<std::string> string_at(const json& o, const char* key, const std::string& where, bool required) const {
    auto it = o.find(key);
    if (it == o.end() || it->is_null()) {
      if (required) return error(where, std::string("'") + key + "' is missing");
      return std::string();
    }
    if (!it->is_string()) return error(where, std::string("'") + key + "' must be a string");
    return it->get<std::string>();
  }
  Result<std::vector<std::string>> strings_at(const json& o, const char* key, const std::string& where) const {
    std::vector<std::string> out;
    auto it = o.find(key);
    if (it == o.end() || it->is_null()) return out;
    if (!it->is_array()) return error(where, std::string("'") + key + "' must be a list");
    for (const auto& v : *it) {
      if (!v.is_string()) return error(where, std::string("'") + key + "' must hold strings");
      out.push_back(v.get<std::string>());
    }
    return out;
  }
  Result<std::optional<uint32_t>> number_at(const json& o, const char* key, const std::string& where) const {
    auto it = o.find(key);
    if (it == o.end() || it->is_null()) return std::optional<uint32_t>();
    if (!it->is_number_integer() || it->get<long long>() < 0)
      return error(where, std::string("'") + key + "' must be a non-negative number");
    return std::optional<uint32_t>(static_cast<uint32_t>(it->get<long long>()));
  }

  // The list under key: nullptr when absent, an error when it is not a list.
  Result<const json*> list_at(const json& o, const char* key, const std::string& where) const {
    auto it = o.find(key);
    if (it == o.end() || it->is_null()) return static_cast<const json*>(nullptr);
    if (!it->is_array()) return error(where, std::string(key) + " must be a list");
    return &*it;
  }

  Status device_nodes(const json& o, const std::string& where, CdiEdits& e) const {
    auto list = list_at(o, "deviceNodes", where);
    if (!list || !*list) return list ? Status(Ok{}) : list.take_error();
    for (const auto& d : **list) {
      CdiDeviceNode n;
      auto path = string_at(d, "path", where + " deviceNodes", true);
      if (!path) return path.take_error();
      if (path->empty() || path->front() != '/') return error(where, "device path '" + *path + "' is not absolute");
      n.path = *path;
      auto host = string_at(d, "hostPath", where, false);
      auto perms = string_at(d, "permissions", where, false);
      if (!host) return host.take_error();
      if (!perms) return perms.take_error();
      n.host_path = *host;
      n.permissions = *perms;
      if (!std::all_of(n.permissions.begin(), n.permissions.end(), [](char c) { return c == 'r' || c == 'w' || c == 'm'; }))
        return error(where, "device permissions '" + n.permissions + "' are not made of r, w, m");
      // uid, gid and fileMode are not read: CRI devices carry no owner or mode, and runc
      // gives the node's own.
      e.device_nodes.push_back(n);
    }
    return Ok{};
  }
  Status mounts(const json& o, const std::string& where, CdiEdits& e) const {
    auto list = list_at(o, "mounts", where);
    if (!list || !*list) return list ? Status(Ok{}) : list.take_error();
    for (const auto& m : **list) {
      CdiMount out;
      auto host = string_at(m, "hostPath", where + " mounts", true);
      auto ctr = string_at(m, "containerPath", where + " mounts", true);
      if (!host) return host.take_error();
      if (!ctr) return ctr.take_error();
      if (ctr->empty() || ctr->front() != '/') return error(where, "mount containerPath '" + *ctr + "' is not absolute");
      auto opts = strings_at(m, "options", where);
      if (!opts) return opts.take_error();
      out.host_path = *host;
      out.container_path = *ctr;
      out.options = *opts;
      e.mounts.push_back(out);
    }
    return Ok{};
  }
  Status hooks(const json& o, const std::string& where, CdiEdits& e) const {
    auto list = list_at(o, "hooks", where);
    if (!list || !*list) return list ? Status(Ok{}) : list.take_error();
    for (const auto& h : **list) {
      CdiHook out;
      auto name = string_at(h, "hookName", where + " hooks", true);
      auto path = string_at(h, "path", where + " hooks", true);
      if (!name) return name.take_error();
      if (!path) return path.take_error();
      auto args = strings_at(h, "args", where), env = strings_at(h, "env", where);
      if (!args) return args.take_error();
      if (!env) return env.take_error();
      auto timeout = number_at(h, "timeout", where);
      if (!timeout) return timeout.take_error();
      out.hook_name = *name;
      out.path = *path;
      out.args = *args;
      out.env = *env;
      if (*timeout) out.timeout_s = static_cast<int>(**timeout);
      e.hooks.push_back(out);
    }
    return Ok{};
  }
  Status gids(const json& o, const std::string& where, CdiEdits& e) const {
    auto list = list_at(o, "additionalGIDs", where);
    if (!list || !*list) return list ? Status(Ok{}) : list.take_error();
    for (const auto& g : **list) {
      if (!g.is_number_integer() || g.get<long long>() < 0) return error(where, "additionalGIDs must hold gids");
      e.additional_gids.push_back(static_cast<uint32_t>(g.get<long long>()));
    }
    return Ok{};
  }

  Result<CdiEdits> edits(const json& o, const std::string& where) const {
    CdiEdits e;
    if (o.is_null()) return e;
    if (!o.is_object()) return error(where, "containerEdits must be a map");
    auto env = strings_at(o, "env", where);
    if (!env) return env.take_error();
    for (const std::string& kv : *env)
      if (kv.find('=') == std::string::npos || kv.front() == '=') return error(where, "env entry '" + kv + "' is not NAME=VALUE");
    e.env = *env;
    for (auto part : {&Reader::device_nodes, &Reader::mounts, &Reader::hooks, &Reader::gids})
      if (auto s = (this->*part)(o, where, e); !s) return s.take_error();
    return e;
  }
};

bool valid_kind(const std::string& kind) {
  size_t slash = kind.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == kind.size() || kind.find('/', slash + 1) != std::string::npos)
    return false;
  return std::all_of(kind.begin(), kind.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_' || c == '/'; });
}

}  // namespace

Result<CdiSpec> parse_cdi_spec(std::string_view text, const std::string& source) {
  json doc;
  bool yaml = source.size() > 5 && (source.ends_with(".yaml") || source.ends_with(".yml"));
  if (yaml) {
    try {
      doc = from_yaml(YAML::Load(std::string(text)));
    } catch (const YAML::Exception& e) {
      return fail("CDI spec " + source + ": not valid YAML: " + e.what());
    }
  } else {
    doc = json::parse(text, nullptr, false);
    if (doc.is_discarded()) return fail("CDI spec " + source + ": not valid JSON");
  }
  Reader r{source};
  if (!doc.is_object()) return r.error("top level", "must be a map");
  CdiSpec spec;
  spec.source = source;
  auto version = r.string_at(doc, "cdiVersion", "top level", true);
  if (!version) return version.take_error();
  if (std::find(kVersions.begin(), kVersions.end(), *version) == kVersions.end())
    return r.error("top level", "unsupported cdiVersion '" + *version + "' (known: 0.3.0 to 1.1.0)");
  spec.version = *version;
  auto kind = r.string_at(doc, "kind", "top level", true);
  if (!kind) return kind.take_error();
  if (!valid_kind(*kind)) return r.error("top level", "kind '" + *kind + "' is not vendor/class");
  spec.kind = *kind;
  auto common = r.edits(doc.value("containerEdits", json()), "containerEdits");
  if (!common) return common.take_error();
  spec.edits = *common;
  auto devices = doc.find("devices");
  if (devices == doc.end() || !devices->is_array() || devices->empty())
    return r.error("top level", "'devices' must be a non-empty list");
  for (const auto& d : *devices) {
    if (!d.is_object()) return r.error("devices", "each device must be a map");
    CdiDevice dev;
    auto name = r.string_at(d, "name", "devices", true);
    if (!name) return name.take_error();
    if (name->empty()) return r.error("devices", "a device name is empty");
    dev.name = *name;
    auto e = r.edits(d.value("containerEdits", json()), "device " + dev.name);
    if (!e) return e.take_error();
    dev.edits = *e;
    spec.devices.push_back(dev);
  }
  return spec;
}

const CdiDevice* cdi_device_for(const CdiSpec& spec, const std::string& host_path) {
  const CdiDevice* best = nullptr;
  for (const CdiDevice& d : spec.devices)
    for (const CdiDeviceNode& n : d.edits.device_nodes)
      if ((n.host_path.empty() ? n.path : n.host_path) == host_path) {
        if (!best || d.edits.device_nodes.size() < best->edits.device_nodes.size()) best = &d;
        break;
      }
  return best;
}

}  // namespace crisp
