#include "agent/devices/cdi_hooks.h"

#include <chrono>
#include <nlohmann/json.hpp>
#include <vector>

#include "common/strings.h"
#include "common/subprocess.h"

namespace crisp {

std::string oci_state_json(const std::string& container_id, int pid, const std::string& bundle) {
  return nlohmann::json{{"ociVersion", "1.0.2"}, {"id", container_id}, {"status", "running"}, {"pid", pid},
                        {"bundle", bundle}}
      .dump();
}

Status run_cdi_hook(const CdiHook& hook, const std::string& state_json) {
  ProcessSpec spec;
  spec.path = hook.path;
  spec.argv = hook.args.empty() ? std::vector<std::string>{hook.path} : hook.args;
  spec.env = hook.env;
  spec.input = state_json;
  spec.timeout = std::chrono::seconds(hook.timeout_s.value_or(30));
  auto r = run_process(spec);
  if (!r) {
    if (r.error_kind() == ErrorKind::kTimedOut) return fail("CDI hook " + hook.path + " did not finish within its timeout");
    return fail("CDI hook " + r.error());
  }
  if (r->succeeded()) return Ok{};
  std::string said = r->err.substr(0, r->err.find('\n'));
  return fail("CDI hook " + join(spec.argv, " ") + " failed (" + r->status_text() + ")" + (said.empty() ? "" : ": " + said));
}

}  // namespace crisp
