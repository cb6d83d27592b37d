# The integration tests' helpers, sourced by run.sh: the test user, running a
# command and keeping its output, expectations, waiting on Slurm and containerd,
# and `t NAME`, which runs test_NAME and reports it on a line of its own.

CTR=(ctr --address "$CONTAINERD_SOCK" -n k8s.io)
CRISPCTL=("$PREFIX/bin/crispctl" --socket "$CRISPD_SOCK")
REQUEST_TOOL=$BUILD_DIR/tests/request_tool
WORK=/home/$TEST_USER/crisp-it
SRUN=(timeout 120 srun)
passed=0 failed=0 not_run=0 only=" $* "  # run.sh NAME...: only these

setup() {
  id "$TEST_USER" >/dev/null || die "test user $TEST_USER missing: run dev/up.sh"
  id -nG "$TEST_USER" | grep -qw "$TEST_GROUP" || die "$TEST_USER is not in $TEST_GROUP: run dev/up.sh"
  rm -rf "$WORK" && mkdir -p "$WORK" && chown "$TEST_USER:" "$WORK"
  mkdir -p /var/tmp/crisp-it/{rw,ro,secret} && chmod 0777 /var/tmp/crisp-it/rw && chmod 0700 /var/tmp/crisp-it/secret
  echo read-only-data >/var/tmp/crisp-it/ro/file && echo top-secret >/var/tmp/crisp-it/secret/file
  rm -f /var/tmp/crisp-it/rw/*
}

# as_user CMD...: runs CMD as the test user from the job's working directory.
as_user() { (cd "$WORK" && runuser -u "$TEST_USER" -- "$@"); }

# Output of the last `run`, and its status.
OUT= ERR= RC=
run() {
  OUT=$("$@" 2>/tmp/crisp-it.err); RC=$?
  ERR=$(cat /tmp/crisp-it.err)
}

FAILS=()
expect() { # expect DESCRIPTION TEST-ARGS...
  local what=$1; shift
  "$@" || FAILS+=("$what")
}
contains() { [[ $1 == *"$2"* ]]; }
lacks() { [[ $1 != *"$2"* ]]; }
equals() { [[ $1 == "$2" ]]; }

# is_job_id ID: whether ID is a job id; if not, the test fails, loudly. An empty id (a job
# never found) would pass every "nothing of job ID left" check: ctr and grep find nothing of it.
is_job_id() {
  [[ $1 =~ ^[1-9][0-9]*$ ]] && return 0
  local why="${FUNCNAME[1]}: '$1' is not a job id (was the job found?)"
  # Once, though a wait_until asks again and again.
  [[ " ${FAILS[*]} " == *" $why "* ]] || { FAILS+=("$why"); echo "$why" >&2; }
  return 1
}

# cri_objects JOB: containers of JOB in containerd, read with ctr (not crispd's API): those
# labelled with the job, and the spares its steps claimed (crispd's claim records).
cri_objects() {
  is_job_id "$1" || { echo "none: no job id"; return 1; }
  local n id; n=$("${CTR[@]}" containers ls -q "labels.\"crisp.slurm/job\"==$1" | wc -l)
  for id in $(grep -lx "job=$1" /run/crisp/claims/* 2>/dev/null | xargs -r -n1 basename); do
    "${CTR[@]}" containers info "$id" >/dev/null 2>&1 && n=$((n + 1))
  done
  echo "$n"
}
no_cri_objects() { is_job_id "$1" && [[ $(cri_objects "$1") == 0 ]]; }
user_sleep_runs() { pgrep -u "$TEST_USER" -x sleep >/dev/null; }
no_user_sleep() { ! user_sleep_runs; }
# running_job NAME: waits for the running job named NAME (srun -J) and its running
# step container, and prints the job id. Names, not "the first running job": an
# earlier job's container lingers a moment after its srun, and stale jobs may exist.
named_job() { squeue -h -t R -n "$1" -o %i | head -1; }
# jobs_named NAME: the ids of the jobs named NAME (srun/sbatch/salloc -J), in any state, while
# slurmctld keeps them (MinJobAge: 300 s after their end); fails if squeue does, so that "no
# job of that name" is never read from a slurmctld that did not answer. Names a test gives
# its jobs, unique to the run ($RANDOM), not "the newest job": any other job may be newer.
jobs_named() { local ids; ids=$(squeue -h -t all -n "$1" -o %i) && sort -n <<<"$ids" | sed '/^$/d'; }
last_job_named() { jobs_named "$1" | tail -1; }
no_job_named() { local ids; ids=$(jobs_named "$1") && [[ -z $ids ]]; }
# Outputs are captured before grep -q, which stops early (SIGPIPE fails a pipefail pipe).
step_running() { is_job_id "$1" && grep -q CONTAINER_RUNNING <<<"$("${CRISPCTL[@]}" ps --job "$1")"; }
running_job() {
  local job=
  for _ in $(seq 300); do job=$(named_job "$1"); [[ -n $job ]] && break; sleep 0.1; done
  [[ -n $job ]] && wait_until 30 step_running "$job" && echo "$job"
}
stat_of() { "${CRISPCTL[@]}" stats | awk -v k="$1" '$1 == k {print $2}'; }
job_finished() { is_job_id "$1" && grep -qE 'JobState=(COMPLETED|FAILED|CANCELLED|TIMEOUT)' <<<"$(scontrol show job "$1" 2>/dev/null)"; }
# settle: no job is completing, so new jobs start at once (Slurm defers them meanwhile).
no_completing_job() { [[ -z $(squeue -h -t CG) ]]; }
settle() { wait_until 30 no_completing_job; }
one_crisp_line() { [[ $(grep -c '^crisp: ' <<<"$1") == 1 ]]; }
# Beside crisp's line, at most srun's own line for the tasks' exit (no SPANK error lines). srun's
# notes that the job waited for its allocation are Slurm's scheduling, not crisp's: set aside.
srun_waited='^srun: job [0-9]+ (queued and waiting for resources|has been allocated resources)$'
nothing_but_srun_exit_line() {
  local rest
  rest=$(grep -v '^crisp: ' <<<"$1" | grep -vE "$srun_waited")
  [[ $(printf %s "$rest" | grep -cvE '^srun: error: [^ ]+: tasks? [0-9,-]+: Exited with exit code [0-9]+$') == 0 &&
    $(printf %s "$rest" | grep -c '^srun: ') -le 1 ]]
}
# expect_crisp_error WHAT TEXT: the last run failed with exactly one "crisp:" line, containing TEXT,
# and at most srun's exit line beside it.
expect_crisp_error() {
  expect "$1: the command fails" equals "$((RC != 0))" 1
  expect "$1: one crisp: line" one_crisp_line "$ERR"
  expect "$1: says '$2'" contains "$ERR" "$2"
  expect "$1: nothing but srun's exit line beside it" nothing_but_srun_exit_line "$ERR"
}

# sbatch_wait SCRIPT NAME: submits SCRIPT as the test user and waits for its end; JOB is the
# job's id, LOG its output ($WORK/NAME-JOB.out, as the script's --output names it).
sbatch_wait() {
  chown "$TEST_USER:" "$1"
  run as_user timeout 120 sbatch --wait "$1"
  JOB=$(grep -o '[0-9]*$' <<<"$OUT")
  LOG=$(cat "$WORK/$2-$JOB.out" 2>/dev/null)
}

# wait_until SECONDS CMD...
wait_until() {
  local secs=$1; shift
  for _ in $(seq $((secs * 10))); do "$@" && return 0; sleep 0.1; done
  return 1
}

t() { # t NAME: runs test_NAME and reports it
  local name=$1
  [[ $only != "  " && $only != *" $name "* ]] && return
  # CRISP_IT_NOT_HERE="NAME=why_in_words ...": tests this cluster cannot give what they need,
  # each named with its reason and counted as neither passed nor failed.
  local skip why
  for skip in ${CRISP_IT_NOT_HERE:-}; do
    why=${skip#*=}
    [[ ${skip%%=*} == "$name" ]] && { not_run=$((not_run + 1)); printf 'not run %-31s %s\n' "$name" "${why//_/ }"; return; }
  done
  FAILS=()
  local t0=$SECONDS
  test_"$name"
  if ((${#FAILS[@]} == 0)); then
    passed=$((passed + 1)); printf 'ok     %-32s %ss\n' "$name" $((SECONDS - t0))
  else
    failed=$((failed + 1)); printf 'FAILED %-32s\n' "$name"
    for f in "${FAILS[@]}"; do printf '         - %s\n' "$f"; done
    printf '         last stdout: %s\n         last stderr: %s\n' "${OUT:0:400}" "${ERR:0:600}"
  fi
}
