// ~/.docker/config.json, as a user may write it.
#include "agent/images/registry_auth.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto in = crisp::fuzz::parts(data, size, 3);
  (void)crisp::find_in_docker_config(in[0], in[1].empty() ? "docker.io" : in[1], in[2]);
  return 0;
}
