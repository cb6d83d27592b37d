// Which job's step claimed a spare. A container's CRI labels are fixed when it
// is made, so a claimed spare's job and step (and the host directories made for
// it) are kept here, one root-only file per container so a restarted crispd
// knows them too, and laid over its labels wherever crispd reads them back.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "agent/cri/cri_types.h"
#include "common/result.h"

namespace crisp {

struct Claim {
  uint32_t job = 0, step = 0;
  int stepd_pid = 0;
  uint64_t stepd_start = 0;  // with the pid, the slurmstepd itself (process_start_time)
  std::string tmpfs_root, hca_view;
};

std::string format_claim(const Claim& c);
// A claim file's text; nullopt when it is not one (crispd ignores and removes it).
std::optional<Claim> parse_claim(const std::string& text);

class ClaimBook {
 public:
  // dir: where claims are kept (made 0700); empty: in memory only.
  explicit ClaimBook(std::string dir) : dir_(std::move(dir)) {}
  // Reads the directory at crispd's start; the number of claims read.
  size_t load();
  Status record(const std::string& container_id, const Claim& claim);
  void forget(const std::string& container_id);
  std::optional<Claim> find(const std::string& container_id) const;
  // A claimed spare's labels become those of a container made for its step; false: c
  // is no claimed spare (a spare still unclaimed, or any other container).
  bool overlay(cri::Container& c) const;
  bool any() const;

 private:
  std::string dir_;
  mutable std::mutex mu_;
  std::map<std::string, Claim> claims_;
};

}  // namespace crisp
