#include "agent/host/user_access.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <functional>
#include <thread>

#include "common/fd.h"
#include "common/files.h"
#include "common/passwd.h"
#include "common/strings.h"

namespace crisp {

namespace {

// Runs work with the user's credentials and returns its result.
Result<std::string> as_user(const UserCreds& creds, const std::function<Result<std::string>()>& work) {
  Result<std::string> result = fail("not checked");
  // Credentials are per thread in the kernel; the raw syscalls change only this
  // short-lived thread's, while glibc's wrappers would change every thread's.
  std::thread worker([&] {
    std::vector<gid_t> groups(creds.groups.begin(), creds.groups.end());
    if (syscall(SYS_setgroups, groups.size(), groups.data()) != 0 ||
        syscall(SYS_setresgid, creds.gid, creds.gid, creds.gid) != 0 ||
        syscall(SYS_setresuid, creds.uid, creds.uid, creds.uid) != 0) {
      result = fail("cannot take the user's credentials: " + errno_text(errno));
      return;
    }
    result = work();
  });
  worker.join();
  return result;
}

}  // namespace

Result<std::string> read_file_as_user(const UserCreds& creds, const std::string& path, size_t max_bytes) {
  return as_user(creds, [&]() -> Result<std::string> {
    Fd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!fd) return fail(path + ": " + errno_text(errno));
    auto data = read_up_to(fd.get(), max_bytes + 1);
    if (!data) return fail(path + ": " + data.error());
    if (data->size() > max_bytes) return fail(path + " is larger than " + std::to_string(max_bytes) + " bytes");
    return data;
  });
}

Result<std::string> resolve_as_user(const UserCreds& creds, const std::string& path) {
  return as_user(creds, [&]() -> Result<std::string> {
    char resolved[PATH_MAX];
    if (!realpath(path.c_str(), resolved)) return fail(path + ": " + errno_text(errno));
    int mode = R_OK;
    struct stat st;
    if (stat(resolved, &st) != 0) return fail(path + ": " + errno_text(errno));
    if (S_ISDIR(st.st_mode)) mode |= X_OK;
    // faccessat with AT_EACCESS uses this thread's effective ids.
    if (faccessat(AT_FDCWD, resolved, mode, AT_EACCESS) != 0) return fail(path + ": " + errno_text(errno));
    return std::string(resolved);
  });
}

Result<std::string> home_of(uint32_t uid) {
  auto pw = lookup_uid(uid);
  if (!pw || pw->home.empty() || pw->home[0] != '/')
    return fail("uid " + std::to_string(uid) + " has no home directory in the password database");
  return pw->home;
}

}  // namespace crisp
