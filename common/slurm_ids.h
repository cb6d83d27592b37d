// Slurm's special step ids (slurm.h's SLURM_*_SCRIPT / SLURM_EXTERN_CONT /
// SLURM_INTERACTIVE_STEP), in one place for the plugin, crispd and crispctl.
#pragma once

#include <cstdint>
#include <string>

namespace crisp::slurm {

inline constexpr uint32_t kInteractiveStep = 0xfffffffa;
inline constexpr uint32_t kBatchStep = 0xfffffffb;
inline constexpr uint32_t kExternStep = 0xfffffffc;

// "batch", "extern", "interactive", or the number.
std::string step_name(uint32_t step_id);
// "job 12 step batch", for logs and messages.
std::string step_text(uint32_t job_id, uint32_t step_id);

}  // namespace crisp::slurm
