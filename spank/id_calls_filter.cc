#include "spank/id_calls_filter.h"

#include <seccomp.h>

#include <cerrno>
#include <cstdint>
#include <memory>

#include "common/strings.h"

namespace crisp {

Status fake_id_calls() {
  std::unique_ptr<void, void (*)(scmp_filter_ctx)> ctx(seccomp_init(SCMP_ACT_ALLOW), seccomp_release);
  if (!ctx) return fail("cannot make the task's seccomp filter");
  const int always[] = {SCMP_SYS(chown),    SCMP_SYS(lchown),   SCMP_SYS(fchown),    SCMP_SYS(fchownat),
                        SCMP_SYS(setuid),   SCMP_SYS(setgid),   SCMP_SYS(setreuid),  SCMP_SYS(setregid),
                        SCMP_SYS(setresuid), SCMP_SYS(setresgid), SCMP_SYS(setgroups)};
  int rc = 0;
  for (int call : always)
    if (rc == 0) rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ERRNO(0), call, 0);
  // setfsuid(-1) asks for the current id: it must keep answering.
  for (int call : {SCMP_SYS(setfsuid), SCMP_SYS(setfsgid)})
    if (rc == 0) rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ERRNO(0), call, 1, SCMP_A0(SCMP_CMP_NE, UINT32_MAX));
  if (rc == 0) rc = seccomp_load(ctx.get());
  if (rc != 0) return fail("cannot install the task's seccomp filter: " + errno_text(-rc));
  return Ok{};
}

}  // namespace crisp
