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

}  // namespace crisp
