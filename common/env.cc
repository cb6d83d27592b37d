#include "common/env.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
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

}  // namespace

bool valid_env_name(std::string_view n) {
  if (n.empty() || std::isdigit(static_cast<unsigned char>(n.front()))) return false;
  return std::all_of(n.begin(), n.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

std::optional<std::string> env_value(const std::vector<std::string>& env, std::string_view name) {
  for (const std::string& kv : env)
    if (kv.size() > name.size() && kv[name.size()] == '=' && std::string_view(kv).substr(0, name.size()) == name)
      return kv.substr(name.size() + 1);
  return std::nullopt;
}

namespace {

// Slurm's and the process manager's variables are the job's: an image may not
// set them (a forged SLURM_JOB_ID or PMIX_SERVER_URI misleads every task).
bool slurms(const std::string& name) {
  return starts_with(name, "SLURM_") || starts_with(name, "PMIX_") || starts_with(name, "PMI_");
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
    if (kept(name) || slurms(name)) continue;
    auto it = job.find(name);
    if (it == job.end() || it->second != value) edits.push_back({name, value});
  }
  if (!image.count("PATH") && !kept("PATH")) {
    auto it = job.find("PATH");
    if (it == job.end() || it->second != kDefaultPath) edits.push_back({"PATH", std::string(kDefaultPath)});
  }
  // The host's locale may not exist in the image (every program would warn).
  auto dropped = [](const std::string& n) { return starts_with(n, "LD_") || n == "LANG" || n == "LANGUAGE" || n == "LC_ALL"; };
  for (const auto& [name, value] : job)
    if (dropped(name) && !image.count(name) && !kept(name)) edits.push_back({name, std::nullopt});
  return edits;
}

std::vector<EnvEdit> pytorch_env(const std::vector<std::string>& image_env, const std::vector<std::string>& job_env) {
  std::vector<EnvEdit> edits;
  if (!env_value(image_env, "PYTORCH_VERSION")) return edits;
  auto set_from = [&](const char* name, const std::optional<std::string>& value) {
    if (!env_value(image_env, name) && value && !value->empty()) edits.push_back({name, *value});
  };
  auto job_value = [&](const char* name) { return env_value(job_env, name); };
  set_from("RANK", job_value("SLURM_PROCID"));
  set_from("LOCAL_RANK", job_value("SLURM_LOCALID"));
  set_from("WORLD_SIZE", job_value("SLURM_NTASKS"));
  if (auto nodes = job_value("SLURM_STEP_NODELIST")) set_from("MASTER_ADDR", first_host(*nodes));
  if (auto id = job_value("SLURM_JOB_ID")) {
    char* end = nullptr;
    unsigned long job_id = std::strtoul(id->c_str(), &end, 10);
    if (end && !*end) set_from("MASTER_PORT", std::to_string(49152 + job_id % 16384));
  }
  return edits;
}

namespace {

std::optional<unsigned> small_number(std::string_view s, int base = 10) {
  if (s.empty() || s.size() > 8) return std::nullopt;
  std::string text(s);
  char* end = nullptr;
  unsigned long v = std::strtoul(text.c_str(), &end, base);
  if (!end || *end || v > 4096) return std::nullopt;
  return static_cast<unsigned>(v);
}

}  // namespace

std::vector<EnvEdit> task_gpu_env(const std::vector<std::string>& step_env, const std::vector<std::string>& task_env,
                                  unsigned n) {
  std::vector<EnvEdit> edits;
  std::optional<std::vector<unsigned>> bound;
  auto bind = env_value(task_env, "SLURMD_TRES_BIND"), local = env_value(task_env, "SLURM_LOCALID");
  if (bind && local)
    if (auto id = small_number(*local)) bound = bound_gpus(*bind, *id, n);
  for (const char* name : {"CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL", "ROCR_VISIBLE_DEVICES"}) {
    auto step = env_value(step_env, name), task = env_value(task_env, name);
    if (bound && (task || name == std::string_view("CUDA_VISIBLE_DEVICES"))) {
      std::vector<std::string> ids;
      for (unsigned g : *bound) ids.push_back(std::to_string(g));
      edits.push_back({name, join(ids, ",")});
      continue;
    }
    if (!step || !task || step->empty() || task->empty()) continue;
    std::vector<std::string> order = split(*step, ','), mine = split(*task, ','), inside;
    for (const std::string& gpu : mine) {
      auto at = std::find(order.begin(), order.end(), gpu);
      if (at == order.end()) break;
      inside.push_back(std::to_string(at - order.begin()));
    }
    if (inside.size() == mine.size()) edits.push_back({name, join(inside, ",")});
  }
  return edits;
}

namespace {

// map_gpu/mask_gpu lists: "a,b*2,c" (a repeat count after '*').
std::vector<std::string> expand_repeats(std::string_view list) {
  std::vector<std::string> out;
  for (const std::string& item : split(list, ',')) {
    size_t star = item.find('*');
    auto count = star == std::string::npos ? std::optional<unsigned>(1) : small_number(item.substr(star + 1));
    for (unsigned i = 0; count && i < *count && out.size() < 4096; ++i) out.push_back(item.substr(0, star));
  }
  return out;
}

// The GPU part of a TRES binding: Slurm 22.05's "gpu:HOW", 24.11's and 26.05's "gres/gpu:HOW",
// one of several joined by '+'.
std::optional<std::string_view> gpu_binding(std::string_view tres_bind) {
  for (std::string_view rest = tres_bind; !rest.empty();) {
    size_t plus = rest.find('+');
    std::string_view one = rest.substr(0, plus);
    rest = plus == std::string_view::npos ? "" : rest.substr(plus + 1);
    if (one.substr(0, 5) == "gres/") one.remove_prefix(5);
    if (one.substr(0, 4) == "gpu:") return one.substr(4);
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::vector<unsigned>> bound_gpus(std::string_view tres_bind, unsigned task, unsigned n) {
  auto binding = gpu_binding(tres_bind);
  if (!binding || n == 0) return std::nullopt;
  std::string_view how = *binding;
  if (starts_with(std::string(how), "verbose,")) how.remove_prefix(8);
  size_t colon = how.find(':');
  std::string_view kind = how.substr(0, colon), arg = colon == std::string_view::npos ? "" : how.substr(colon + 1);
  // --tres-bind names them "map" and "mask", --gpu-bind "map_gpu" and "mask_gpu".
  bool map = kind == "map_gpu" || kind == "map", mask = kind == "mask_gpu" || kind == "mask";
  std::vector<unsigned> gpus;
  if (kind == "per_task") {
    auto per = small_number(arg);
    if (!per || *per == 0) return std::nullopt;
    for (unsigned j = 0; j < *per && j < n; ++j) gpus.push_back((task * *per + j) % n);
  } else if (map || mask) {
    std::vector<std::string> list = expand_repeats(arg);
    if (list.empty()) return std::nullopt;
    const std::string& mine = list[task % list.size()];
    auto v = small_number(mine, mask ? 16 : 10);
    if (!v) return std::nullopt;
    if (map) gpus.push_back(*v);
    for (unsigned bit = 0; mask && bit < 32; ++bit)
      if (*v & (1u << bit)) gpus.push_back(bit);
  } else {
    return std::nullopt;
  }
  if (gpus.empty() || std::any_of(gpus.begin(), gpus.end(), [&](unsigned g) { return g >= n; })) return std::nullopt;
  return gpus;
}

std::string first_host(std::string_view hostlist) {
  size_t end = hostlist.find_first_of(",[");
  std::string prefix(hostlist.substr(0, end));
  if (end == std::string_view::npos || hostlist[end] == ',') return prefix;
  // "prefix[a-b,c]suffix": the first range's first number, zero padding kept.
  size_t close = hostlist.find(']', end);
  if (close == std::string_view::npos) return prefix;
  std::string_view ranges = hostlist.substr(end + 1, close - end - 1);
  std::string_view first = ranges.substr(0, ranges.find_first_of(",-"));
  // What follows the brackets up to the next host may hold more ranges ("r[1-2]-n[3-4]").
  std::string_view rest = hostlist.substr(close + 1);
  if (rest.empty() || rest.front() == ',') return prefix + std::string(first);
  return prefix + std::string(first) + first_host(rest);
}

Result<std::vector<std::string>> parse_env_names(std::string_view text) {
  std::vector<std::string> names = split(text, ',');
  for (const std::string& n : names)
    if (!valid_env_name(n))
      return fail("invalid --container-env name '" + n +
                  "': expected NAME[,NAME...] of letters, digits and '_'");
  return names;
}

}  // namespace crisp
