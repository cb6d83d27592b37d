#include "agent/site/site_files.h"

#include <algorithm>
#include <array>

#include "common/env.h"
#include "common/mount_spec.h"
#include "common/strings.h"

namespace crisp {
namespace {

bool blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

// fstab(5)'s octal escapes of the characters a field cannot hold.
std::string unescape_field(std::string_view f) {
  static constexpr std::array<std::pair<std::string_view, char>, 4> kEscapes{
      {{"\\040", ' '}, {"\\011", '\t'}, {"\\012", '\n'}, {"\\134", '\\'}}};
  std::string out;
  for (size_t i = 0; i < f.size(); ++i) {
    auto e = std::find_if(kEscapes.begin(), kEscapes.end(), [&](const auto& x) { return f.substr(i).starts_with(x.first); });
    if (e == kEscapes.end()) {
      out += f[i];
    } else {
      out += e->second;
      i += e->first.size() - 1;
    }
  }
  return out;
}

std::vector<std::string_view> fields_of(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && blank(line[i])) ++i;
    size_t start = i;
    while (i < line.size() && !blank(line[i])) ++i;
    if (i > start) fields.push_back(line.substr(start, i - start));
  }
  return fields;
}

constexpr std::array<std::string_view, 6> kPropagations{"private", "rprivate", "slave", "rslave", "shared", "rshared"};
// Options a CRI bind mount cannot carry: the source's own mount keeps its flags.
constexpr std::array<std::string_view, 6> kNotApplied{"nosuid", "nodev", "noexec", "suid", "dev", "exec"};
// Options that change nothing for a bind mount (enroot's x-create: the runtime makes
// a missing mount point, a directory or a file as the source is).
bool no_op(std::string_view o) {
  return o == "bind" || o == "rbind" || o == "defaults" || o == "silent" || o.starts_with("x-create=");
}

// What the runtime makes in every container: enroot, which has no runtime, mounts the host's
// (its own mounts.d/10-system.fstab); a container of crisp's keeps its own.
bool runtimes_tree(const std::string& path) {
  for (std::string_view tree : {"/proc", "/sys", "/dev"})
    if (path == tree || path.starts_with(std::string(tree) + "/")) return true;
  return false;
}

}  // namespace

std::string substitute_env(std::string_view text, const EnvLookup& lookup, bool* used) {
  std::string out;
  size_t i = 0;
  for (size_t open = text.find("${"); open != std::string_view::npos; open = text.find("${", i)) {
    size_t close = text.find('}', open + 2);
    std::string_view name = close == std::string_view::npos ? "" : text.substr(open + 2, close - open - 2);
    if (!valid_env_name(name)) {
      // Not a ${NAME}: the '$' stays, and a ${NAME} after it ("${A${B}}") is still found.
      out.append(text.substr(i, open + 1 - i));
      i = open + 1;
      continue;
    }
    out.append(text.substr(i, open - i));
    if (auto v = lookup(name)) out += *v;
    if (used) *used = true;
    i = close + 1;
  }
  out.append(text.substr(i));
  return out;
}

Result<std::optional<FstabLine>> parse_fstab_line(std::string_view line, const EnvLookup& lookup) {
  std::vector<std::string_view> f = fields_of(line);
  if (f.empty() || f[0].front() == '#') return std::optional<FstabLine>();
  if (f.size() < 2) return fail("a mount needs a source and a target");
  if (f.size() > 6) return fail("more than six fields");
  FstabLine out;
  out.source = substitute_env(unescape_field(f[0]), lookup, &out.source_from_env);
  out.target = substitute_env(unescape_field(f[1]), lookup);
  if (f.size() > 2) out.type = substitute_env(unescape_field(f[2]), lookup);
  if (f.size() > 3) out.options = split(substitute_env(unescape_field(f[3]), lookup), ',');
  return std::optional<FstabLine>(std::move(out));
}

Result<SiteMountSpec> site_mount_of(const FstabLine& line, bool read_write_default) {
  SiteMountSpec m;
  m.tmpfs = line.type == "tmpfs";
  if (!m.tmpfs && !line.type.empty() && line.type != "none" && line.type != "bind")
    return fail("file system type " + line.type + " is not supported (bind mounts and tmpfs only)");
  m.source = m.tmpfs ? "" : normalize_path(line.source);
  m.target = normalize_path(line.target);
  m.source_from_env = line.source_from_env && !m.tmpfs;
  m.readonly = !read_write_default && !m.tmpfs;
  if (!m.tmpfs && (line.source.empty() || line.source.front() != '/'))
    return fail("the source must be an absolute path: " + line.source);
  if (line.target.empty() || line.target.front() != '/') return fail("the target must be an absolute path: " + line.target);
  for (const std::string& p : {m.source, m.target}) {
    std::vector<std::string> parts = split(p, '/');
    if (std::ranges::find(parts, "..") != parts.end()) return fail("\"..\" in a path");
    if (runtimes_tree(p)) return fail("a path in /proc, /sys or /dev, which the runtime makes in every container");
  }
  for (const std::string& o : line.options) {
    if (m.tmpfs && tmpfs_option(o)) {
      m.tmpfs_options += (m.tmpfs_options.empty() ? "" : ",") + o;
    } else if (m.tmpfs && (o == "ro" || o == "rw" || o == "nosuid" || o == "nodev")) {
      continue;  // crisp's tmpfs is writable by the user, nosuid and nodev
    } else if (o == "ro" || o == "rw") {
      m.readonly = o == "ro";
    } else if (std::ranges::find(kPropagations, o) != kPropagations.end()) {
      m.propagation = o;
    } else if (o == "nofail") {
      m.optional = true;
    } else if (std::ranges::find(kNotApplied, o) != kNotApplied.end()) {
      m.ignored.push_back(o);
    } else if (!o.empty() && !no_op(o)) {
      return fail("mount option " + o + " is not supported");
    }
  }
  return m;
}

std::vector<std::string> parse_environ_lines(std::string_view text, const EnvLookup& lookup) {
  std::vector<std::string> out;
  for (const std::string& raw : split(text, '\n')) {
    // envsubst, then envfmt, line by line (a value's newline adds no line).
    std::string line = substitute_env(raw, lookup);
    line.erase(0, line.find_first_not_of(" \t"));
    if (line.empty() || line.front() == '#') continue;
    size_t eq = line.find('=');
    if (eq == std::string::npos || !valid_env_name(std::string_view(line).substr(0, eq)) || line.starts_with("ENROOT_"))
      continue;
    std::string value = line.substr(eq + 1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t' || value.back() == '\r')) value.pop_back();
    // envfmt drops one pair of quotes around the value (trailing blanks after them too).
    if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') && (value.back() == '"' || value.back() == '\''))
      value = value.substr(1, value.size() - 2);
    else
      value = line.substr(eq + 1);
    out.push_back(line.substr(0, eq + 1) + value);
    if (out.size() == kMaxSiteEnv) break;
  }
  return out;
}

}  // namespace crisp
