#include "agent/devices/gres.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <sstream>

#include "common/strings.h"

namespace crisp {
namespace {

// Splits on sep outside brackets and parentheses: "a[1,2],b(IDX:0,1)" -> "a[1,2]", "b(IDX:0,1)".
std::vector<std::string> split_outside_brackets(std::string_view s, char sep) {
  std::vector<std::string> out(1);
  int depth = 0;
  for (char c : s) {
    if (c == '[' || c == '(') depth++;
    if (c == ']' || c == ')') depth--;
    if (c == sep && depth == 0) {
      out.emplace_back();
      continue;
    }
    out.back() += c;
  }
  return out;
}

Result<std::vector<unsigned>> parse_ranges(std::string_view text, std::vector<std::string>* padded) {
  std::vector<unsigned> out;
  for (const std::string& part : split(text, ',')) {
    size_t dash = part.find('-');
    std::string lo = part.substr(0, dash), hi = dash == std::string::npos ? lo : part.substr(dash + 1);
    auto digits = [](const std::string& d) {
      return !d.empty() && d.size() < 9 && std::all_of(d.begin(), d.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    };
    if (!digits(lo) || !digits(hi)) return fail("bad range '" + part + "'");
    unsigned a = static_cast<unsigned>(std::stoul(lo)), b = static_cast<unsigned>(std::stoul(hi));
    if (b < a || b - a >= kMaxGpuIndices) return fail("bad range '" + part + "'");
    // Bounded in all: ranges repeated ("0-1000,0-1000,...") must not expand without end.
    if (out.size() + (b - a + 1) > kMaxGpuIndices)
      return fail("more than " + std::to_string(kMaxGpuIndices) + " entries");
    for (unsigned i = a; i <= b; ++i) {
      out.push_back(i);
      if (padded) {
        std::string n = std::to_string(i);
        if (n.size() < lo.size()) n.insert(0, lo.size() - n.size(), '0');
        padded->push_back(n);
      }
    }
  }
  return out;
}

// Does a Slurm host list ("gpu[01-04],big") name node?
bool hostlist_has(std::string_view list, const std::string& node) {
  for (const std::string& item : split_outside_brackets(list, ',')) {
    auto lb = item.find('[');
    if (lb == std::string::npos) {
      if (item == node) return true;
      continue;
    }
    auto names = expand_device_range(item);
    if (names)
      for (const std::string& n : *names)
        if (n == node) return true;
  }
  return false;
}

}  // namespace

Result<std::vector<std::string>> expand_device_range(std::string_view pattern) {
  size_t lb = pattern.find('[');
  if (lb == std::string_view::npos) return std::vector<std::string>{std::string(pattern)};
  size_t rb = pattern.find(']', lb);
  if (rb == std::string_view::npos) return fail("unclosed '[' in '" + std::string(pattern) + "'");
  std::vector<std::string> numbers;
  if (auto r = parse_ranges(pattern.substr(lb + 1, rb - lb - 1), &numbers); !r)
    return fail("in '" + std::string(pattern) + "': " + r.error());
  auto rest = expand_device_range(pattern.substr(rb + 1));
  if (!rest) return rest;
  if (numbers.size() * rest->size() > kMaxGpuIndices)
    return fail("'" + std::string(pattern) + "' names more than " + std::to_string(kMaxGpuIndices) + " files");
  std::vector<std::string> out;
  for (const std::string& n : numbers)
    for (const std::string& r : *rest) out.push_back(std::string(pattern.substr(0, lb)) + n + r);
  return out;
}

Result<std::vector<std::string>> gres_device_files(std::string_view gres_conf, const std::string& name,
                                                   const std::string& node) {
  std::vector<std::string> files;
  std::istringstream in{std::string(gres_conf)};
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    lineno++;
    line = line.substr(0, line.find('#'));
    std::istringstream words(line);
    std::string gres_name, file, nodes;
    bool has_nodes = false;
    for (std::string w; words >> w;) {
      size_t eq = w.find('=');
      if (eq == std::string::npos) continue;
      std::string key = w.substr(0, eq), value = w.substr(eq + 1);
      for (char& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (key == "name") gres_name = value;
      else if (key == "file") file = value;
      else if (key == "nodename") nodes = value, has_nodes = true;
    }
    if (gres_name != name || file.empty() || (has_nodes && !hostlist_has(nodes, node))) continue;
    auto expanded = expand_device_range(file);
    if (!expanded) return fail("gres.conf line " + std::to_string(lineno) + ": " + expanded.error());
    files.insert(files.end(), expanded->begin(), expanded->end());
  }
  return files;
}

Result<std::vector<unsigned>> parse_index_list(std::string_view text) {
  if (text.empty()) return std::vector<unsigned>{};
  auto r = parse_ranges(text, nullptr);
  if (!r) return fail("bad GPU index list '" + std::string(text) + "': " + r.error());
  return r;
}

Result<std::vector<unsigned>> gpu_indices_in_gres_detail(std::string_view detail) {
  std::vector<unsigned> out;
  for (const std::string& item : split_outside_brackets(detail, ',')) {
    if (item.rfind("gpu", 0) != 0 || (item.size() > 3 && item[3] != ':' && item[3] != '(')) continue;
    size_t open = item.find("(IDX:"), close = item.rfind(')');
    if (open == std::string::npos || close == std::string::npos || close < open) continue;
    std::string list = item.substr(open + 5, close - open - 5);
    if (list == "N/A") continue;
    auto r = parse_index_list(list);
    if (!r) return r;
    out.insert(out.end(), r->begin(), r->end());
  }
  return out;
}

bool tres_has_gpus(std::string_view tres) {
  std::string text(tres);
  std::replace(text.begin(), text.end(), ';', ',');
  for (std::string item : split(text, ',')) {
    // "gres/gpu=2", "gres/gpu:a100=2" (allocated) or "gres:gpu:2", "gres:gpu:a100:2" (asked).
    if (item.rfind("gres/", 0) != 0 && item.rfind("gres:", 0) != 0) continue;
    item = item.substr(5);
    std::replace(item.begin(), item.end(), '=', ':');
    std::vector<std::string> parts = split(item, ':');
    if (parts.empty() || parts[0] != "gpu") continue;
    const std::string& count = parts.back();
    bool numeric = parts.size() > 1 && !count.empty() &&
                   std::all_of(count.begin(), count.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    if (!numeric || std::strtoul(count.c_str(), nullptr, 10) > 0) return true;
  }
  return false;
}

}  // namespace crisp
