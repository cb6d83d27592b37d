// Slurm's GPU allocation as device files: SLURM_STEP_GPUS / SLURM_JOB_GPUS
// hold indices into the node's gres.conf device list for a gres name, in the
// file's order with File= ranges expanded. Pure: the caller reads the file.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace crisp {

// The most entries a range list or a File= pattern may expand to: more GPUs
// (or files) than any node has, few enough that a forged list costs nothing.
inline constexpr size_t kMaxGpuIndices = 1024;

// "/dev/nvidia[0-3,5]" -> /dev/nvidia0 ... /dev/nvidia3, /dev/nvidia5 (zero padding kept).
Result<std::vector<std::string>> expand_device_range(std::string_view pattern);

// The device files of gres `name` on node `node`, in index order. Lines with a
// NodeName= that does not list the node are skipped (ranges like gpu[1-4] included).
Result<std::vector<std::string>> gres_device_files(std::string_view gres_conf, const std::string& name,
                                                   const std::string& node);

// "0,2-3" -> {0, 2, 3}.
Result<std::vector<unsigned>> parse_index_list(std::string_view text);

// What slurmctld says of an allocation, which the user cannot write (the job's
// environment they can): the GPU indices of one node's gres detail
// ("gpu:a100:2(IDX:0,2),nic:1(IDX:0)" -> {0, 2}), and whether a TRES string
// holds or asks for GPUs ("cpu=2,gres/gpu=1", "gres:gpu:a100:2" -> true).
Result<std::vector<unsigned>> gpu_indices_in_gres_detail(std::string_view detail);
bool tres_has_gpus(std::string_view tres);

}  // namespace crisp
