// What a device plan asks of the container: device files and host files to
// bind in. Plain data; the step manager turns it into CRI fields.
#pragma once

#include <string>

namespace crisp {

struct PlannedDevice {
  std::string host_path;
  std::string container_path;
  std::string permissions = "rwm";
};

struct PlannedMount {
  std::string host_path;
  std::string container_path;
  bool readonly = false;
};

}  // namespace crisp
