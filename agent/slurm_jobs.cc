#include "agent/slurm_jobs.h"

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#include <cstdlib>
#include <mutex>
#include <string>

#include "agent/devices/gres.h"
#include "common/log.h"
#include "common/slurm_ids.h"

namespace crisp {
namespace {

void init_once() {
  static std::once_flag init;
  std::call_once(init, [] { slurm_init(nullptr); });
}

// The entry of node in a job's node list: gres_detail_str is in that order.
int node_index(const char* nodes, const std::string& node) {
  if (!nodes) return -1;
  hostlist_t hl = slurm_hostlist_create(nodes);
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
  if (slurm_get_job_steps(0, job_id, step_id, &steps, SHOW_ALL) != SLURM_SUCCESS)
    return fail(std::string("slurmctld: ") + slurm_strerror(slurm_get_errno()));
  bool has = false;
  for (uint32_t i = 0; i < steps->job_step_count; ++i) {
    const job_step_info_t& st = steps->job_steps[i];
    has = has || any_gpus({st.tres_alloc_str, st.tres_per_step, st.tres_per_node, st.tres_per_socket, st.tres_per_task});
  }
  slurm_free_job_step_info_response_msg(steps);
  return has;
}

}  // namespace

Result<StepGpus> slurm_step_gpus(uint32_t job_id, uint32_t step_id, const std::string& node) {
  init_once();
  job_info_msg_t* info = nullptr;
  if (slurm_load_job(&info, job_id, SHOW_DETAIL) != SLURM_SUCCESS)
    return fail(std::string("slurmctld: ") + slurm_strerror(slurm_get_errno()));
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

JobLiveness slurm_job_liveness(uint32_t job_id) {
  init_once();
  job_info_msg_t* info = nullptr;
  if (slurm_load_job(&info, job_id, SHOW_ALL) != SLURM_SUCCESS) {
    int err = slurm_get_errno();
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
  if (slurm_get_job_steps(0, job_id, step_id, &steps, SHOW_ALL) != SLURM_SUCCESS) {
    log_warn("asking slurmctld about " + slurm::step_text(job_id, step_id) + ": " + slurm_strerror(slurm_get_errno()));
    return JobLiveness::kUnknown;
  }
  JobLiveness out = steps->job_step_count > 0 ? JobLiveness::kAlive : JobLiveness::kOver;
  slurm_free_job_step_info_response_msg(steps);
  return out;
}

}  // namespace crisp
