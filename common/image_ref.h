// Image references as users write them for Pyxis: the Docker form
// (registry/repository:tag@digest) and the enroot form
// ([USER@][REGISTRY#]IMAGE[:TAG]), with or without a docker:// prefix.
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"

namespace crisp {

struct ImageRef {
  std::string user;        // enroot form's USER@, for registry credentials
  std::string registry;    // host[:port]; docker.io when none is given
  std::string repository;  // path inside the registry, library/ added on Docker Hub
  std::string tag;         // empty only when a digest pins the image
  std::string digest;      // algorithm:hex, or empty

  // registry/repository[:tag][@digest], the form CRI PullImage takes.
  std::string canonical() const;
};

Result<ImageRef> parse_image_ref(std::string_view text);

// Pyxis's rule: an image starting with "/" or "." names a squashfs file.
bool is_image_file(std::string_view text);
// Such a path as a user may give it: not empty, no NUL, not a directory's ("/" at the end).
Status check_image_file(std::string_view text);

}  // namespace crisp
