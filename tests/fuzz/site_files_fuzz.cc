// The site's files (admin's) with values the user's job environment substitutes, and an
// image's /etc/fstab (the user's own): a fstab line (bind or tmpfs) and an environ.d file,
// each part of the input, the last the value of every ${NAME}.
#include "agent/site/site_files.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto in = crisp::fuzz::parts(data, size, 3);
  crisp::EnvLookup lookup = [&](std::string_view name) -> std::optional<std::string> {
    if (name.size() % 2) return std::nullopt;
    return in[2];
  };
  auto line = crisp::parse_fstab_line(in[0], lookup);
  if (line && *line) (void)crisp::site_mount_of(**line, size % 2 == 0);
  (void)crisp::parse_environ_lines(in[1], lookup);
  return 0;
}
