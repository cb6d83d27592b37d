#include "agent/images/registry_auth.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <sstream>
#include <vector>

namespace crisp {
namespace {

std::string host_of(std::string_view key) {
  if (auto p = key.find("://"); p != std::string_view::npos) key.remove_prefix(p + 3);
  return std::string(key.substr(0, key.find('/')));
}

std::optional<std::string> base64_decode(std::string_view in) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  int bits = 0, acc = 0;
  for (char c : in) {
    if (c == '=') break;
    int v = value(c);
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return out;
}

}  // namespace

bool registry_matches(std::string_view key, const std::string& registry) {
  std::string host = host_of(key);
  if (host == registry) return true;
  static const std::vector<std::string> hub = {"docker.io", "index.docker.io", "registry-1.docker.io",
                                               "auth.docker.io"};
  auto is_hub = [&](const std::string& h) { return std::find(hub.begin(), hub.end(), h) != hub.end(); };
  return is_hub(registry) && is_hub(host);
}

FoundCredential find_in_netrc(std::string_view text, const std::string& registry, const std::string& login) {
  std::istringstream in{std::string(text)};
  std::vector<std::string> tokens;
  for (std::string t; in >> t;) tokens.push_back(t);
  std::optional<RegistryCredential> found;
  bool in_entry = false;
  RegistryCredential cur;
  auto close_entry = [&] {
    if (in_entry && !found && (login.empty() || cur.username == login) && !cur.username.empty()) found = cur;
    in_entry = false;
    cur = {};
  };
  for (size_t i = 0; i < tokens.size(); ++i) {
    const std::string& k = tokens[i];
    bool keyword = k == "machine" || k == "login" || k == "password";
    if (keyword && i + 1 == tokens.size()) return fail("it ends with '" + k + "' and no value after it");
    if (k == "default") {
      close_entry();
    } else if (k == "machine") {
      close_entry();
      in_entry = registry_matches(tokens[++i], registry);
    } else if (k == "login") {
      cur.username = tokens[++i];
    } else if (k == "password") {
      cur.password = tokens[++i];
    }
  }
  close_entry();
  return found;
}

namespace {

// One "auths" entry of a Docker config; nullopt when it holds no username (a credential helper's).
FoundCredential docker_entry(const nlohmann::json& entry, const std::string& key) {
  std::string where = "auths[\"" + key + "\"]";
  if (!entry.is_object()) return fail(where + " is not an object");
  RegistryCredential c;
  if (auto a = entry.find("auth"); a != entry.end()) {
    if (!a->is_string()) return fail(where + ".auth is not a string");
    if (a->get_ref<const std::string&>().empty()) return std::optional<RegistryCredential>();
    auto decoded = base64_decode(a->get_ref<const std::string&>());
    size_t colon = decoded ? decoded->find(':') : std::string::npos;
    if (colon == std::string::npos) return fail(where + ".auth is not base64 of USER:PASSWORD");
    c.username = decoded->substr(0, colon);
    c.password = decoded->substr(colon + 1);
  } else {
    for (auto [field, out] : {std::pair{"username", &c.username}, std::pair{"password", &c.password}}) {
      auto f = entry.find(field);
      if (f == entry.end()) continue;
      if (!f->is_string()) return fail(where + "." + field + " is not a string");
      *out = f->get<std::string>();
    }
  }
  if (c.username.empty()) return std::optional<RegistryCredential>();
  return std::optional<RegistryCredential>(c);
}

}  // namespace

FoundCredential find_in_docker_config(std::string_view json, const std::string& registry, const std::string& login) {
  nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
  if (j.is_discarded()) return fail("not valid JSON");
  if (!j.is_object()) return fail("not a JSON object");
  auto auths = j.find("auths");
  if (auths == j.end()) return std::optional<RegistryCredential>();
  if (!auths->is_object()) return fail("\"auths\" is not an object");
  for (const auto& [key, entry] : auths->items()) {
    if (!registry_matches(key, registry)) continue;
    auto c = docker_entry(entry, key);
    if (!c) return c;
    if (*c && (login.empty() || (*c)->username == login)) return c;
  }
  return std::optional<RegistryCredential>();
}

}  // namespace crisp
