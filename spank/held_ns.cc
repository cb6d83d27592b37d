#include "spank/held_ns.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <utility>

#include "common/strings.h"

namespace crisp {

Result<HeldNs> HeldNs::hold(Fd fd) {
  struct stat st {};
  if (fstat(fd.get(), &st) != 0)
    return fail("cannot read the step's namespace descriptor: fstat: " + errno_text(errno));
  HeldNs ns;
  ns.fd_ = std::move(fd);
  ns.dev_ = st.st_dev;
  ns.ino_ = st.st_ino;
  ns.opener_ = getpid();
  return ns;
}

HeldNs& HeldNs::operator=(HeldNs&& other) noexcept {
  if (this != &other) {
    reset();
    fd_ = std::move(other.fd_);
    dev_ = other.dev_;
    ino_ = other.ino_;
    opener_ = other.opener_;
  }
  return *this;
}

int HeldNs::here() const {
  if (!fd_) return -1;
  // The opener's table, or its child's copy of it (slurmstepd's tasks are forked
  // after user_init): never a CLONE_VM peer's, whose numbers are its own.
  if (opener_ != getpid() && opener_ != getppid()) return -1;
  // Still that file: not closed since, nor the number reused.
  struct stat st {};
  if (fstat(fd_.get(), &st) != 0 || st.st_dev != dev_ || st.st_ino != ino_) return -1;
  return fd_.get();
}

void HeldNs::reset() {
  if (here() < 0) fd_.release();
  fd_.reset();
}

}  // namespace crisp
