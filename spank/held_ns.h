// A namespace descriptor that knows what it names. slurmstepd may run a callback
// in a clone(CLONE_VM) child (SlurmdParameters=contain_spank, Slurm 24.05+):
// memory shared, descriptor table not. A number kept in memory may then be
// closed, or another of slurmstepd's files, in the process that reads it.
#pragma once

#include <sys/types.h>

#include "common/fd.h"
#include "common/result.h"

namespace crisp {

class HeldNs {
 public:
  HeldNs() = default;
  // Keeps fd (a /proc/PID/ns/ file just opened) with the file fstat names and this process's pid.
  static Result<HeldNs> hold(Fd fd);
  ~HeldNs() { reset(); }
  HeldNs(HeldNs&&) noexcept = default;
  HeldNs& operator=(HeldNs&& other) noexcept;
  HeldNs(const HeldNs&) = delete;
  HeldNs& operator=(const HeldNs&) = delete;

  // Whether one was opened, by this process or another.
  bool recorded() const { return fd_.valid(); }
  // The descriptor, or -1 where this process's table does not have it as the file opened.
  int here() const;
  pid_t opener() const { return opener_; }
  // Closes it where this process has it; elsewhere only forgets the number.
  void reset();

 private:
  Fd fd_;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  pid_t opener_ = 0;
};

}  // namespace crisp
