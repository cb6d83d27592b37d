// gres.conf, device ranges ("/dev/nvidia[0-3]"), GPU index lists ("0-2,5"),
// and what slurmctld says of an allocation (gres detail, TRES strings).
#include "agent/devices/gres.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto in = crisp::fuzz::parts(data, size, 2);
  (void)crisp::gres_device_files(in[0], "gpu", in[1].empty() ? "node1" : in[1]);
  (void)crisp::expand_device_range(in[1]);
  auto indices = crisp::parse_index_list(in[1]);
  if (indices && indices->size() > crisp::kMaxGpuIndices) __builtin_trap();
  (void)crisp::gpu_indices_in_gres_detail(in[1]);
  (void)crisp::tres_has_gpus(in[0]);
  return 0;
}
