# What a step leaves and how crispd's absence, hang or restart look to users. Sourced by run.sh.

# The holder is the one process a container keeps; the user's others are Slurm's to end.
# The test user's holders, but those of spares no step has claimed (made ahead, of no job).
unclaimed_spare_pids() {
  local id
  for id in $("${CTR[@]}" containers ls -q 'labels."crisp.slurm/spare"==true'); do
    [[ -e /run/crisp/claims/$id ]] || "${CTR[@]}" tasks ls | awk -v id="$id" '$1 == id {print $2}'
  done
}
# This cluster's alone: a newer release's cluster in its root (dev/matrix.sh) has its own pid namespace.
user_holders() {
  pgrep --ns $$ --nslist pid -u "$TEST_USER" -f '^/\.crisp/holder' | grep -vxF -f <(unclaimed_spare_pids; echo none) | wc -l
}

# The job ends (its epilog returns) once none of its processes is left; containerd's own
# stop and removal (70 ms a container) follow it, so the node's next job need not wait.
test_nothing_left_after_a_job() {
  local name=crisp-it-nothing-left-$RANDOM
  local before; before=$(user_holders)  # the user's global named containers, kept
  run as_user "${SRUN[@]}" -J "$name" -n2 --container-image="$TEST_IMAGE" sleep 1
  local job; job=$(last_job_named "$name")
  expect "srun succeeds" equals "$RC" 0
  expect "the job completes" wait_until 30 job_finished "$job"
  expect "no holder of the job's is left when the job has ended" equals "$(user_holders)" "$before"
  expect "containerd removes what it had of job $job" wait_until 10 no_cri_objects "$job"
  expect "crispctl ps shows nothing of it" lacks "$("${CRISPCTL[@]}" ps --job "$job" | tail -n +2)" "$job"
}

# 32 steps of one job at once: all of a user's containers share one sandbox and its shim, which
# a flood of starts once made containerd fail ("namespace path: lstat /proc/0/ns/ipc").
test_concurrent_steps_of_one_job() {
  local job; job=$(as_user salloc --no-shell -p debug -J crisp-it-concurrent 2>&1 | grep -o '[0-9]\+' | head -1)
  expect "salloc grants a job" equals "$([[ -n $job ]] && echo y)" y
  local pids=() i rcs=
  for i in $(seq 32); do
    as_user "${SRUN[@]}" --jobid "$job" --overlap --container-image="$TEST_IMAGE" \
      grep -q "crisp test image" /etc/os-release >"/tmp/crisp-it.conc.$i" 2>&1 &
    pids+=($!)
  done
  for i in "${pids[@]}"; do wait "$i"; rcs+=$?; done
  expect "all 32 steps ran in the image" equals "$rcs" "$(printf '0%.0s' $(seq 32))"
  OUT=$rcs ERR=$(cat /tmp/crisp-it.conc.* | grep '^crisp:' | sort | uniq -c | head -3)
  rm -f /tmp/crisp-it.conc.*
  scancel "$job"
  wait_until 30 no_cri_objects "$job"
  expect "nothing of job $job left in containerd" equals "$(cri_objects "$job")" 0
}

test_scancel_kills_and_cleans_up() {
  local name=crisp-it-scancel-$RANDOM
  as_user "${SRUN[@]}" -J "$name" --container-image="$TEST_IMAGE" sleep 300 >/dev/null 2>&1 &
  local srun_pid=$!
  local job; job=$(running_job "$name")
  expect "the step's container runs" equals "$([[ -n $job ]] && echo y)" y
  expect "its sleep runs" wait_until 10 user_sleep_runs
  scancel "$job"
  wait_until 20 bash -c "! kill -0 $srun_pid 2>/dev/null"
  expect "srun ends" equals "$(kill -0 $srun_pid 2>/dev/null && echo running)" ""
  wait_until 20 no_user_sleep
  expect "no task left" equals "$(pgrep -u "$TEST_USER" -x sleep | wc -l)" 0
  wait_until 20 no_cri_objects "$job"
  expect "nothing of job $job in containerd" equals "$(cri_objects "$job")" 0
  kill "$srun_pid" 2>/dev/null; wait "$srun_pid" 2>/dev/null
}

crispd_answers() { "${CRISPCTL[@]}" stats >/dev/null 2>&1; }

test_crispd_down_times_out_with_a_message() {
  stop_crispd
  # Who still answers on the socket, if anything does, for the failure report.
  crispd_answers && FAILS+=("crispd still answers after the stop: $(ss -xlpn 2>/dev/null | grep -F "$CRISPD_SOCK" | tr -s ' ')")
  local t0=$SECONDS
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" true
  expect "without hanging" equals "$((SECONDS - t0 < 15))" 1
  expect_crisp_error "crispd down" "is crispd running on this node?"
  start_crispd
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" true
  expect "works again once crispd is back" equals "$RC" 0
}

test_hung_crispd_times_out_with_a_message() {
  settle  # a job epilog under way would wait on the stopped crispd too
  kill -STOP "$(cat "$RUN/crispd.pid")"
  local t0=$SECONDS name=crisp-it-hung-$RANDOM
  run as_user "${SRUN[@]}" -J "$name" --container-image="$TEST_IMAGE" true
  local job; job=$(last_job_named "$name")
  expect "after the idle timeout, not the pull timeout" equals "$((SECONDS - t0 < 40))" 1
  expect_crisp_error "crispd hung" "did not answer within 15 s: is it hung?"
  kill -CONT "$(cat "$RUN/crispd.pid")"
  expect "the job completes" wait_until 60 job_finished "$job"
  expect "what crispd made late is gone" wait_until 60 no_cri_objects "$job"
}

test_restarted_crispd_loses_nothing() {
  local name=crisp-it-restart-$RANDOM
  as_user "${SRUN[@]}" -J "$name" --container-image="$TEST_IMAGE" sh -c 'sleep 4; echo survived' >/tmp/crisp-it.r 2>&1 &
  local srun_pid=$!
  local job; job=$(running_job "$name")
  start_crispd
  expect "a restarted crispd still lists the step" contains "$("${CRISPCTL[@]}" ps --job "$job")" "CONTAINER_RUNNING"
  expect "a user sees their own step" contains "$(runuser -u "$TEST_USER" -- "${CRISPCTL[@]}" ps)" "$job"
  wait "$srun_pid"
  expect "the step finished" contains "$(cat /tmp/crisp-it.r)" "survived"
  expect "the job completes" wait_until 30 job_finished "$job"
  expect "and was released" equals "$(cri_objects "$job")" 0
}
