#include "spank/seam.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "common/passwd.h"
#include "common/slurm_ids.h"

namespace crisp::seam {
namespace {

template <typename T>
Result<T> item(spank_t sp, spank_item_t which, const char* name) {
  T v{};
  if (spank_err_t e = spank_get_item(sp, which, &v); e != ESPANK_SUCCESS)
    return fail(std::string("cannot read ") + name + " from Slurm: " + spank_strerror(e));
  return v;
}

std::string user_name(uid_t uid) {
  auto pw = lookup_uid(uid);
  return pw ? pw->name : std::to_string(uid);
}

}  // namespace

spank_context_t context() { return spank_context(); }

bool remote(spank_t sp) { return spank_remote(sp) != 0; }

Status register_options(spank_t sp, std::vector<spank_option>& options) {
  for (spank_option& opt : options)
    if (spank_option_register(sp, &opt) != ESPANK_SUCCESS) return fail(std::string("cannot register --") + opt.name);
  return Ok{};
}

std::optional<std::string> job_option(spank_t sp, spank_option& option) {
  char* arg = nullptr;
  if (spank_option_getopt(sp, &option, &arg) != ESPANK_SUCCESS) return std::nullopt;
  return std::string(arg ? arg : "");
}

Result<StepContext> read_step(spank_t sp) {
  StepContext s;
  auto job = item<uint32_t>(sp, S_JOB_ID, "the job id");
  auto step = item<uint32_t>(sp, S_JOB_STEPID, "the step id");
  auto uid = item<uid_t>(sp, S_JOB_UID, "the job's uid");
  auto gid = item<gid_t>(sp, S_JOB_GID, "the job's gid");
  if (!job) return job.take_error();
  if (!step) return step.take_error();
  if (!uid) return uid.take_error();
  if (!gid) return gid.take_error();
  s.job_id = *job;
  s.step_id = *step;
  s.uid = *uid;
  s.gid = *gid;
  gid_t* gids = nullptr;
  int ngids = 0;
  if (spank_get_item(sp, S_JOB_SUPPLEMENTARY_GIDS, &gids, &ngids) == ESPANK_SUCCESS)
    for (int i = 0; i < ngids; ++i) s.groups.push_back(gids[i]);
  s.user = user_name(s.uid);
  s.env = job_env(sp);
  const std::vector<std::string>& env = s.env;
  s.workdir = job_workdir_from_env(env);
  // Set by slurmstepd before the plugin runs: gres indices of the step's GPUs.
  s.gpus = env_value(env, "SLURM_STEP_GPUS").value_or(env_value(env, "SLURM_JOB_GPUS").value_or(""));
  s.stepd_pid = getpid();
  // Slurm's batch step runs the spooled script, argv[0].
  int argc = 0;
  char** argv = nullptr;
  if (s.step_id == slurm::kBatchStep && spank_get_item(sp, S_JOB_ARGV, &argc, &argv) == ESPANK_SUCCESS && argc > 0)
    s.batch_script = argv[0];
  return s;
}

Result<std::pair<uint32_t, uint32_t>> job_owner(spank_t sp) {
  auto uid = item<uid_t>(sp, S_JOB_UID, "the job's uid");
  if (!uid) return uid.take_error();
  auto gid = item<gid_t>(sp, S_JOB_GID, "the job's gid");
  if (!gid) return gid.take_error();
  return std::pair<uint32_t, uint32_t>(*uid, *gid);
}

int node_id(spank_t sp) {
  uint32_t id = 0;
  return spank_get_item(sp, S_JOB_NODEID, &id) == ESPANK_SUCCESS ? static_cast<int>(id) : -1;
}

std::vector<std::string> job_env(spank_t sp) {
  char** env = nullptr;
  std::vector<std::string> out;
  if (spank_get_item(sp, S_JOB_ENV, &env) != ESPANK_SUCCESS || !env) return out;
  for (char** e = env; *e; ++e) out.emplace_back(*e);
  return out;
}

uint32_t local_task_count(spank_t sp) {
  uint32_t n = 0;
  return spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &n) == ESPANK_SUCCESS ? n : 0;
}

int local_task_id(spank_t sp) {
  int id = -1;
  if (spank_get_item(sp, S_TASK_ID, &id) != ESPANK_SUCCESS) return -1;
  return id;
}

Result<uint32_t> job_id(spank_t sp) { return item<uint32_t>(sp, S_JOB_ID, "the job id"); }

Status apply_env(spank_t sp, const std::vector<EnvEdit>& edits) {
  for (const EnvEdit& e : edits) {
    spank_err_t rc = e.value ? spank_setenv(sp, e.name.c_str(), e.value->c_str(), 1)
                             : spank_unsetenv(sp, e.name.c_str());
    if (rc != ESPANK_SUCCESS)
      return fail("cannot set " + e.name + " in the task's environment: " + spank_strerror(rc));
  }
  return Ok{};
}

void user_output(const std::string& text) {
  // One write keeps a line whole when several tasks report at once.
  if (write(STDERR_FILENO, text.data(), text.size()) < 0) return;
}

void user_error(const std::string& message) { user_output("crisp: " + message + "\n"); }

void stepd_error(const std::string& message) { slurm_error("crisp: %s", message.c_str()); }

void daemon_log(const std::string& message) { slurm_info("crisp: %s", message.c_str()); }

void exit_command(int status) { std::exit(status); }

// _exit: the child must not run slurmstepd's atexit handlers nor flush its stdio buffers.
void exit_task(int status) { _exit(status); }

}  // namespace crisp::seam
