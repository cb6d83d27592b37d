// A directory of a test's own under /tmp, 0755 (other users walk through it too).
#pragma once

#include <stdlib.h>
#include <sys/stat.h>

#include <string>

namespace crisp_test {

inline std::string make_test_dir(const std::string& name) {
  std::string tmpl = "/tmp/crisp-" + name + "-XXXXXX";
  if (!mkdtemp(tmpl.data()) || chmod(tmpl.c_str(), 0755) != 0) return "";
  return tmpl;
}

}  // namespace crisp_test
