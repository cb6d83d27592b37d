#include "agent/steps/user_sandboxes.h"

#include "agent/cri/cri_client.h"
#include "agent/cri/labels.h"
#include "agent/steps/phase_clock.h"
#include "common/log.h"
#include "common/time.h"

namespace crisp {

Result<std::string> UserSandboxes::create_container(uint32_t uid, const std::string& user,
                                                    const cri::ContainerConfig& config, const std::string& image,
                                                    PhaseClock* clock) {
  const cri::PodSandboxConfig sandbox_config = build_user_sandbox_config(uid, user, node_);
  // The sandbox this crispd knows: the user's creates go side by side (a burst of steps), under
  // the user's lock shared, which keeps the sweep from removing it meanwhile.
  if (std::optional<std::string> remembered = known(uid)) {
    auto lock = locks_.share_user(uid);
    if (known(uid) == remembered) {
      auto id = create_in(*remembered, config, sandbox_config, clock);
      if (id) return id;
      // The sandbox may have gone without this crispd (containerd lost it, an admin removed
      // it): asked anew, once, under the whole lock.
      forget_if(uid, *remembered);
    }
  }
  auto lock = locks_.lock_user(uid);
  auto sandbox = find_or_run(uid, sandbox_config);
  if (!sandbox) return sandbox.take_error();
  auto id = create_in(*sandbox, config, sandbox_config, clock);
  if (!id) return fail("cannot create the step's container from " + image + ": " + id.error());
  return id;
}

Result<std::string> UserSandboxes::create_in(const std::string& sandbox, const cri::ContainerConfig& config,
                                             const cri::PodSandboxConfig& sandbox_config, PhaseClock* clock) {
  if (clock) clock->begin("create");
  auto id = cri_.create_container(sandbox, config, sandbox_config);
  touch(sandbox);
  return id;
}

Result<std::string> UserSandboxes::find_or_run(uint32_t uid, const cri::PodSandboxConfig& config) {
  Labels sel = {{labels::kManaged, "true"}, {labels::kJob, "0"}, {labels::kUid, std::to_string(uid)}};
  auto found = cri_.list_pod_sandboxes(sel);
  if (!found) return found.take_error();
  for (const cri::PodSandbox& sb : *found) {
    if (sb.state() == cri::SANDBOX_READY) {
      remember(uid, sb.id());
      return sb.id();
    }
    // A sandbox that is not ready is a leftover: it must go before its name can be reused.
    log_warn("removing sandbox " + sb.id() + " of uid " + std::to_string(uid) + ", which is not ready");
    if (auto s = cri_.remove_pod_sandbox(sb.id()); !s) return s.take_error();
  }
  auto id = cri_.run_pod_sandbox(config, runtime_handler_);
  if (!id) return fail("cannot create the sandbox of uid " + std::to_string(uid) + ": " + id.error());
  remember(uid, *id);
  return id;
}

std::optional<std::string> UserSandboxes::known(uint32_t uid) {
  std::lock_guard lock(mu_);
  auto it = ids_.find(uid);
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

void UserSandboxes::remember(uint32_t uid, const std::string& sandbox_id) {
  std::lock_guard lock(mu_);
  ids_[uid] = sandbox_id;
}

void UserSandboxes::forget_if(uint32_t uid, const std::string& sandbox_id) {
  std::lock_guard lock(mu_);
  if (auto it = ids_.find(uid); it != ids_.end() && it->second == sandbox_id) ids_.erase(it);
}

void UserSandboxes::touch(const std::string& sandbox_id) {
  if (sandbox_id.empty()) return;
  std::lock_guard lock(mu_);
  used_ns_[sandbox_id] = now_ns();
}

int64_t UserSandboxes::last_used_ns(const cri::PodSandbox& sandbox) {
  std::lock_guard lock(mu_);
  auto it = used_ns_.find(sandbox.id());
  return it == used_ns_.end() ? sandbox.created_at() : std::max(it->second, sandbox.created_at());
}

Result<bool> UserSandboxes::remove_if_empty(const cri::PodSandbox& sandbox) {
  uint32_t uid = labels::number_of(sandbox.labels(), labels::kUid);
  auto lock = locks_.lock_user(uid);
  auto rest = cri_.list_containers({}, sandbox.id());
  if (!rest) return rest.take_error();
  if (!rest->empty()) return false;
  if (auto s = cri_.stop_pod_sandbox(sandbox.id()); !s) return s.take_error();
  if (auto s = cri_.remove_pod_sandbox(sandbox.id()); !s) return s.take_error();
  forget_if(uid, sandbox.id());
  std::lock_guard mine(mu_);
  used_ns_.erase(sandbox.id());
  return true;
}

}  // namespace crisp
