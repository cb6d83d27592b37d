// --container-image as a user writes it, and the canonical form it becomes.
#include "common/image_ref.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto ref = crisp::parse_image_ref(crisp::fuzz::text(data, size));
  // What crispd hands containerd must parse again to itself.
  if (ref) {
    auto again = crisp::parse_image_ref(ref->canonical());
    if (!again || again->canonical() != ref->canonical()) __builtin_trap();
  }
  return 0;
}
