#include "agent/host/light_child.h"

#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "common/strings.h"

namespace crisp {
namespace {

// The child's own stack: its work is a few system calls and small frames.
constexpr size_t kStackBytes = 256 * 1024;

struct Context {
  const std::function<int()>* fn;
  itimerval timer;
  int value;
};

// Its memory, unmapped when the child is gone (CLONE_VFORK: when clone returns).
class Stack {
 public:
  Stack() : page_(static_cast<size_t>(sysconf(_SC_PAGESIZE))), size_(kStackBytes + page_) {
    void* m = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    // The lowest page a guard: an overflow faults instead of writing crispd's memory.
    if (m != MAP_FAILED && mprotect(m, page_, PROT_NONE) != 0) {
      munmap(m, size_);
      m = MAP_FAILED;
    }
    mem_ = m == MAP_FAILED ? nullptr : static_cast<char*>(m);
  }
  ~Stack() {
    if (mem_) munmap(mem_, size_);
  }
  Stack(const Stack&) = delete;
  Stack& operator=(const Stack&) = delete;
  char* top() const { return mem_ ? mem_ + size_ : nullptr; }

 private:
  size_t page_, size_;
  char* mem_ = nullptr;
};

int child_main(void* arg) {
  auto* c = static_cast<Context*>(arg);
  // Its handlers are a copy of crispd's and its mask the caller's: SIGALRM must kill it.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigset_t alarm;
  sigemptyset(&alarm);
  sigaddset(&alarm, SIGALRM);
  if (sigaction(SIGALRM, &dfl, nullptr) != 0 || sigprocmask(SIG_UNBLOCK, &alarm, nullptr) != 0 ||
      prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || setitimer(ITIMER_REAL, &c->timer, nullptr) != 0)
    _exit(1);
  c->value = (*c->fn)();
  _exit(0);
}

}  // namespace

Result<int> run_light_child(const std::function<int()>& fn, std::chrono::milliseconds timeout, Files files) {
  Stack stack;
  if (!stack.top()) return fail("cannot map a child's stack: " + errno_text(errno));
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(timeout).count();
  if (us < 1) us = 1;
  Context c{&fn, {}, -1};
  c.timer.it_value.tv_sec = us / 1000000;
  c.timer.it_value.tv_usec = us % 1000000;
  // Returns once the child has exited or been killed: it no longer uses the stack.
  int flags = CLONE_VM | CLONE_VFORK | SIGCHLD | (files == Files::kShared ? CLONE_FILES : 0);
  pid_t pid = clone(child_main, stack.top(), flags, &c);
  if (pid < 0) return fail("clone: " + errno_text(errno));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return fail("waitpid: " + errno_text(errno));
  if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM) return fail(ErrorKind::kTimedOut, "did not end in time");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return fail("died before answering");
  return c.value;
}

bool take_user_file_rights(uint32_t uid, uint32_t gid, const std::vector<uint32_t>& groups) {
  static_assert(sizeof(gid_t) == sizeof(uint32_t));
  // Raw system calls: glibc's would change every thread of crispd, whose memory this is. The
  // effective ids set the file-system ones too; -1 leaves the real and saved ids root's.
  if (syscall(SYS_setgroups, groups.size(), groups.data()) != 0 || syscall(SYS_setresgid, -1, gid, -1) != 0 ||
      syscall(SYS_setresuid, -1, uid, -1) != 0)
    return false;
  // setfs*id answer the current id, never an error (-1 changes nothing): a check of the above.
  if (static_cast<uint32_t>(syscall(SYS_setfsgid, -1)) != gid || static_cast<uint32_t>(syscall(SYS_setfsuid, -1)) != uid) {
    errno = EPERM;
    return false;
  }
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct none[_LINUX_CAPABILITY_U32S_3] = {};
  return syscall(SYS_capset, &header, none) == 0;
}

}  // namespace crisp
