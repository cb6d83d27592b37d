// --container-mounts, then each source made absolute against a working directory.
#include "common/mount_spec.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto in = crisp::fuzz::parts(data, size, 2);
  auto mounts = crisp::parse_mounts(in[0]);
  if (mounts)
    for (const crisp::MountSpec& m : *mounts) (void)crisp::resolve_relative(m, "/" + in[1]);
  (void)crisp::normalize_path(in[1]);
  return 0;
}
