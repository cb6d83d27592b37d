#include "agent/cdi_hooks.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "common/strings.h"

namespace crisp {

std::string oci_state_json(const std::string& container_id, int pid, const std::string& bundle) {
  return nlohmann::json{{"ociVersion", "1.0.2"}, {"id", container_id}, {"status", "running"}, {"pid", pid},
                        {"bundle", bundle}}
      .dump();
}

Status run_cdi_hook(const CdiHook& hook, const std::string& state_json) {
  std::vector<std::string> args = hook.args.empty() ? std::vector<std::string>{hook.path} : hook.args;
  std::vector<char*> argv, envp;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env = hook.env;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  int in[2];
  if (pipe(in) != 0) return fail("pipe: " + errno_text(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], STDIN_FILENO);
  posix_spawn_file_actions_addclose(&fa, in[1]);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, hook.path.c_str(), &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  close(in[0]);
  if (rc != 0) {
    close(in[1]);
    return fail("CDI hook " + hook.path + " cannot run: " + errno_text(rc));
  }
  // A hook may exit without reading its state (EPIPE: SIGPIPE is ignored in crispd).
  if (write(in[1], state_json.data(), state_json.size()) < 0 && errno != EPIPE) {
    int err = errno;
    close(in[1]);
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    return fail("cannot give CDI hook " + hook.path + " its state: " + errno_text(err));
  }
  close(in[1]);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(hook.timeout_s.value_or(30));
  int status = 0;
  for (;;) {
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) return fail("waiting for CDI hook " + hook.path + ": " + errno_text(errno));
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return fail("CDI hook " + hook.path + " did not finish within its timeout");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return Ok{};
  return fail("CDI hook " + join(args, " ") + " failed (" +
              (WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                                 : "signal " + std::to_string(WTERMSIG(status))) +
              ")");
}

}  // namespace crisp
