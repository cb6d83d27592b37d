// A CDI spec, as JSON and as YAML.
#include "agent/devices/cdi.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text = crisp::fuzz::text(data, size);
  for (const char* source : {"spec.json", "spec.yaml"}) {
    auto spec = crisp::parse_cdi_spec(text, source);
    if (spec) (void)crisp::cdi_device_for(*spec, "/dev/nvidia0");
  }
  return 0;
}
