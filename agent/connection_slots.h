// ConnectionSlots: crispd's socket is every user's (0666): one user may hold only a few
// connections at once, and all users together fewer than root (slurmstepd), whose
// requests are served whatever users do.
#pragma once

#include <sys/types.h>

#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace crisp {

class ConnectionSlots {
 public:
  static constexpr int kMaxPerUser = 16;
  static constexpr int kMaxUsers = 256;
  static constexpr int kMaxRoot = 512;

  // Why a connection got no slot: the line its client is told (which limit, whose), and
  // the counts for crispd's log (empty for root's).
  struct Denied {
    std::string user_line;
    std::string counts;
  };
  // A slot for a connection of uid, or why not.
  std::optional<Denied> take(uid_t uid);
  void give(uid_t uid);

 private:
  std::mutex mu_;
  int root_ = 0, users_ = 0;
  std::map<uid_t, int> per_user_;
};

}  // namespace crisp
