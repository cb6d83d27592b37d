#include "agent/spares/claims.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <sstream>

#include "agent/cri/labels.h"
#include "common/files.h"
#include "common/log.h"
#include "common/strings.h"

namespace crisp {
namespace {

constexpr size_t kClaimFileMax = 8192;

bool id_like(const std::string& id) {
  return !id.empty() && id.size() <= 128 && id.find_first_not_of("0123456789abcdef") == std::string::npos;
}

template <class T>
bool parse_number(const std::string& text, T& out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

std::string format_claim(const Claim& c) {
  return "job=" + std::to_string(c.job) + "\nstep=" + std::to_string(c.step) + "\nstepd=" + std::to_string(c.stepd_pid) +
         "\nstepd_start=" + std::to_string(c.stepd_start) + "\ntmpfs=" + c.tmpfs_root + "\nhca=" + c.hca_view + "\n";
}

std::optional<Claim> parse_claim(const std::string& text) {
  Claim c;
  std::istringstream in(text);
  std::string line;
  int seen = 0;
  while (std::getline(in, line)) {
    size_t eq = line.find('=');
    if (eq == std::string::npos) return std::nullopt;
    std::string key = line.substr(0, eq), value = line.substr(eq + 1);
    bool ok = true;
    if (key == "job") ok = parse_number(value, c.job);
    else if (key == "step") ok = parse_number(value, c.step);
    else if (key == "stepd") ok = parse_number(value, c.stepd_pid);
    else if (key == "stepd_start") ok = parse_number(value, c.stepd_start);
    else if (key == "tmpfs") c.tmpfs_root = value;
    else if (key == "hca") c.hca_view = value;
    else ok = false;
    if (!ok) return std::nullopt;
    seen++;
  }
  if (seen != 6 || c.job == 0) return std::nullopt;
  return c;
}

size_t ClaimBook::load() {
  if (dir_.empty()) return 0;
  if (mkdir(dir_.c_str(), 0700) != 0 && errno != EEXIST) log_warn("cannot create " + dir_ + ": " + errno_text(errno));
  std::lock_guard lock(mu_);
  for (const std::string& name : list_dir(dir_)) {
    auto text = read_text(dir_ + "/" + name, kClaimFileMax);
    auto claim = text ? parse_claim(*text) : std::nullopt;
    if (!id_like(name) || !claim) {
      log_warn("removing " + dir_ + "/" + name + ", which is no claim of a spare container");
      (void)unlink((dir_ + "/" + name).c_str());
      continue;
    }
    claims_[name] = *claim;
  }
  return claims_.size();
}

Status ClaimBook::record(const std::string& container_id, const Claim& claim) {
  if (!id_like(container_id)) return fail("not a container id: " + container_id);
  if (!dir_.empty()) {
    std::string path = dir_ + "/" + container_id, tmp = path + ".tmp", text = format_claim(claim);
    Fd fd(open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd || write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()) || fsync(fd.get()) != 0 ||
        rename(tmp.c_str(), path.c_str()) != 0)
      return fail("cannot record the claim of container " + container_id + " in " + dir_ + ": " + errno_text(errno));
  }
  std::lock_guard lock(mu_);
  claims_[container_id] = claim;
  return Ok{};
}

void ClaimBook::forget(const std::string& container_id) {
  std::lock_guard lock(mu_);
  if (!claims_.erase(container_id) || dir_.empty()) return;
  if (unlink((dir_ + "/" + container_id).c_str()) != 0 && errno != ENOENT)
    log_warn("cannot remove the claim of container " + container_id + ": " + errno_text(errno));
}

std::optional<Claim> ClaimBook::find(const std::string& container_id) const {
  std::lock_guard lock(mu_);
  auto it = claims_.find(container_id);
  if (it == claims_.end()) return std::nullopt;
  return it->second;
}

bool ClaimBook::overlay(cri::Container& c) const {
  if (labels::value_of(c.labels(), labels::kSpare) != "true") return false;
  auto claim = find(c.id());
  if (!claim) return false;
  auto& l = *c.mutable_labels();
  l[labels::kJob] = std::to_string(claim->job);
  l[labels::kStep] = std::to_string(claim->step);
  if (!claim->tmpfs_root.empty()) l[labels::kTmpfs] = claim->tmpfs_root;
  if (!claim->hca_view.empty()) l[labels::kHcaView] = claim->hca_view;
  return true;
}

bool ClaimBook::any() const {
  std::lock_guard lock(mu_);
  return !claims_.empty();
}

}  // namespace crisp
