#include "common/env.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "common/strings.h"

namespace crisp {
namespace {

std::map<std::string, std::string> to_map(const std::vector<std::string>& env) {
  std::map<std::string, std::string> out;
  for (const std::string& kv : env) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    out.insert_or_assign(kv.substr(0, eq), kv.substr(eq + 1));
  }
  return out;
}

bool valid_name(std::string_view n) {
  if (n.empty() || std::isdigit(static_cast<unsigned char>(n.front()))) return false;
  return std::all_of(n.begin(), n.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

}  // namespace

std::vector<EnvEdit> merge_env(const std::vector<std::string>& image_env,
                               const std::vector<std::string>& job_env,
                               const std::vector<std::string>& keep) {
  auto image = to_map(image_env);
  auto job = to_map(job_env);
  auto kept = [&](const std::string& name) {
    return std::find(keep.begin(), keep.end(), name) != keep.end() && job.count(name);
  };

  std::vector<EnvEdit> edits;
  for (const auto& [name, value] : image) {
    if (kept(name)) continue;
    auto it = job.find(name);
    if (it == job.end() || it->second != value) edits.push_back({name, value});
  }
  if (!image.count("PATH") && !kept("PATH")) {
    auto it = job.find("PATH");
    if (it == job.end() || it->second != kDefaultPath) edits.push_back({"PATH", std::string(kDefaultPath)});
  }
  for (const auto& [name, value] : job)
    if (starts_with(name, "LD_") && !image.count(name) && !kept(name)) edits.push_back({name, std::nullopt});
  return edits;
}

Result<std::vector<std::string>> parse_env_names(std::string_view text) {
  std::vector<std::string> names = split(text, ',');
  for (const std::string& n : names)
    if (!valid_name(n))
      return fail("invalid --container-env name '" + n +
                  "': expected NAME[,NAME...] of letters, digits and '_'");
  return names;
}

}  // namespace crisp
