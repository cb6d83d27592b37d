#include "agent/slurm/slurm_jobs.h"

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#include <cerrno>
#include <cstdlib>
#include <mutex>
#include <string>
#include <type_traits>

#include "agent/devices/gres.h"
#include "common/log.h"
#include "common/slurm_ids.h"

namespace crisp {
namespace {

// libslurm's API as it changed between the releases crisp builds against (22.05 to 26.05),
// told apart by what the headers declare rather than by version numbers, so the releases
// between them build too: hostlist_t became an incomplete struct used by pointer (23.11);
// slurm_get_errno went (libslurm sets errno, as it always did underneath); 26.05 asks for
// jobs and steps by a slurm_step_id_t and names a step's TRES tres_fmt_alloc_str.
using Hostlist = decltype(slurm_hostlist_create(nullptr));
using StepsReply = job_step_info_response_msg_t*;

slurm_step_id_t step_id_of(uint32_t job_id, uint32_t step_id) {
  slurm_step_id_t id{};
  id.job_id = job_id, id.step_het_comp = NO_VAL, id.step_id = step_id;
  return id;
}

template <class Fn>
int get_job_steps(Fn fn, uint32_t job_id, uint32_t step_id, StepsReply* out) {
  if constexpr (std::is_invocable_v<Fn, slurm_step_id_t*, StepsReply*, uint16_t>) {
    slurm_step_id_t id = step_id_of(job_id, step_id);
    return fn(&id, out, SHOW_ALL);
  } else {
    return fn(0, job_id, step_id, out, SHOW_ALL);
  }
}
int get_job_steps(uint32_t job_id, uint32_t step_id, StepsReply* out) {
  return get_job_steps(&slurm_get_job_steps, job_id, step_id, out);
}

template <class Fn>
int load_job(Fn fn, uint32_t job_id, job_info_msg_t** out, uint16_t flags) {
  if constexpr (std::is_invocable_v<Fn, job_info_msg_t**, slurm_step_id_t, uint16_t>)
    return fn(out, step_id_of(job_id, NO_VAL), flags);
  else
    return fn(out, job_id, flags);
}
// 26.05's slurm_load_job is a C11 _Generic macro: its address is the function's.
int load_job(uint32_t job_id, job_info_msg_t** out, uint16_t flags) { return load_job(&slurm_load_job, job_id, out, flags); }

template <class Step>
const char* step_tres(const Step& st) {
  if constexpr (requires { st.tres_fmt_alloc_str; })
    return st.tres_fmt_alloc_str;
  else
    return st.tres_alloc_str;
}

std::string slurmctld_error() { return std::string("slurmctld: ") + slurm_strerror(errno); }

void init_once() {
  static std::once_flag init;
  std::call_once(init, [] { slurm_init(nullptr); });
}

// The entry of node in a job's node list: gres_detail_str is in that order.
int node_index(const char* nodes, const std::string& node) {
  if (!nodes) return -1;
  Hostlist hl = slurm_hostlist_create(nodes);
  int i = 0, found = -1;
  for (char* h; found < 0 && (h = slurm_hostlist_shift(hl)); ++i) {
    if (node == h) found = i;
    free(h);
  }
  slurm_hostlist_destroy(hl);
  return found;
}

bool any_gpus(std::initializer_list<const char*> tres) {
  for (const char* t : tres)
    if (t && tres_has_gpus(t)) return true;
  return false;
}

Result<bool> step_has_gpus(uint32_t job_id, uint32_t step_id) {
  job_step_info_response_msg_t* steps = nullptr;
  if (get_job_steps(job_id, step_id, &steps) != SLURM_SUCCESS) return fail(slurmctld_error());
  bool has = false;
  for (uint32_t i = 0; i < steps->job_step_count; ++i) {
    const job_step_info_t& st = steps->job_steps[i];
    has = has || any_gpus({step_tres(st), st.tres_per_step, st.tres_per_node, st.tres_per_socket, st.tres_per_task});
  }
  slurm_free_job_step_info_response_msg(steps);
  return has;
}

}  // namespace

Result<StepGpus> slurm_step_gpus(uint32_t job_id, uint32_t step_id, const std::string& node) {
  init_once();
  job_info_msg_t* info = nullptr;
  if (load_job(job_id, &info, SHOW_DETAIL) != SLURM_SUCCESS) return fail(slurmctld_error());
  StepGpus out;
  Status parsed = Ok{};
  if (info->record_count > 0) {
    const slurm_job_info_t& job = info->job_array[0];
    out.has = any_gpus({job.tres_alloc_str, job.tres_per_job, job.tres_per_node, job.tres_per_socket, job.tres_per_task});
    int i = node_index(job.nodes, node);
    if (i >= 0 && static_cast<uint32_t>(i) < job.gres_detail_cnt && job.gres_detail_str[i]) {
      auto idx = gpu_indices_in_gres_detail(job.gres_detail_str[i]);
      if (idx && !idx->empty()) out.within = *idx;
      if (!idx) parsed = idx.take_error();
    }
  }
  slurm_free_job_info_msg(info);
  if (!parsed) return parsed.take_error();
  if (!out.has || step_id == slurm::kBatchStep || step_id == slurm::kInteractiveStep) return out;
  auto has = step_has_gpus(job_id, step_id);
  if (!has) return has.take_error();
  out.has = *has;
  return out;
}

Result<std::string> slurm_job_partition(uint32_t job_id) {
  init_once();
  job_info_msg_t* info = nullptr;
  if (load_job(job_id, &info, SHOW_ALL) != SLURM_SUCCESS) return fail(slurmctld_error());
  std::string partition;
  if (info->record_count > 0 && info->job_array[0].partition) partition = info->job_array[0].partition;
  slurm_free_job_info_msg(info);
  if (partition.empty()) return fail("slurmctld does not know job " + std::to_string(job_id) + "'s partition");
  return partition;
}

JobLiveness slurm_job_liveness(uint32_t job_id) {
  init_once();
  job_info_msg_t* info = nullptr;
  if (load_job(job_id, &info, SHOW_ALL) != SLURM_SUCCESS) {
    int err = errno;
    if (err == ESLURM_INVALID_JOB_ID) return JobLiveness::kOver;  // ended long enough ago to be purged
    log_warn("asking slurmctld about job " + std::to_string(job_id) + ": " + slurm_strerror(err));
    return JobLiveness::kUnknown;
  }
  JobLiveness out = JobLiveness::kOver;
  for (uint32_t i = 0; i < info->record_count; ++i) {
    uint32_t state = info->job_array[i].job_state;
    // Pending, running or suspended, and not yet completing: its steps may come back to its containers.
    if ((state & JOB_STATE_BASE) < JOB_COMPLETE && !(state & JOB_COMPLETING)) out = JobLiveness::kAlive;
  }
  slurm_free_job_info_msg(info);
  return out;
}

JobLiveness slurm_step_liveness(uint32_t job_id, uint32_t step_id) {
  JobLiveness job = slurm_job_liveness(job_id);
  if (job != JobLiveness::kAlive) return job;
  job_step_info_response_msg_t* steps = nullptr;
  if (get_job_steps(job_id, step_id, &steps) != SLURM_SUCCESS) {
    log_warn("asking slurmctld about " + slurm::step_text(job_id, step_id) + ": " + slurmctld_error());
    return JobLiveness::kUnknown;
  }
  JobLiveness out = steps->job_step_count > 0 ? JobLiveness::kAlive : JobLiveness::kOver;
  slurm_free_job_step_info_response_msg(steps);
  return out;
}

}  // namespace crisp
