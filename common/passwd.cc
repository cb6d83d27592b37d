#include "common/passwd.h"

#include <pwd.h>

#include <cerrno>
#include <vector>

namespace crisp {

std::optional<PasswdEntry> lookup_uid(uint32_t uid) {
  struct passwd pw, *found = nullptr;
  std::vector<char> buf(16384);
  // ERANGE: an entry larger than the buffer; grow it a few times, then give up.
  for (int tries = 0; tries < 4; ++tries) {
    int rc = getpwuid_r(uid, &pw, buf.data(), buf.size(), &found);
    if (rc == ERANGE) {
      buf.resize(buf.size() * 4);
      continue;
    }
    if (rc != 0 || !found) return std::nullopt;
    return PasswdEntry{pw.pw_name ? pw.pw_name : "", pw.pw_dir ? pw.pw_dir : ""};
  }
  return std::nullopt;
}

}  // namespace crisp
