#!/bin/bash
# End-to-end tests on the real local cluster (dev/up.sh --no-demo first):
# srun -> spank_crisp.so -> crispd -> containerd's CRI -> tasks in the image.
# Each test asserts what a user would check. Ends with "N passed, N failed".
source "$(dirname "$0")/../../dev/lib.sh"
set +e -o pipefail

CTR=(ctr --address "$CONTAINERD_SOCK" -n k8s.io)
CRISPCTL=("$PREFIX/bin/crispctl" --socket "$CRISPD_SOCK")
REQUEST_TOOL=$BUILD_DIR/tests/request_tool
WORK=/home/$TEST_USER/crisp-it
SRUN=(timeout 120 srun)
passed=0 failed=0 only=${1:-}

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

# cri_objects JOB: sandboxes and containers of JOB in containerd, read with ctr (not crispd).
cri_objects() { "${CTR[@]}" containers ls -q "labels.\"crisp.slurm/job\"==$1" | wc -l; }
no_cri_objects() { [[ $(cri_objects "$1") == 0 ]]; }
user_sleep_runs() { pgrep -u "$TEST_USER" -x sleep >/dev/null; }
no_user_sleep() { ! user_sleep_runs; }
# running_job NAME: waits for the running job named NAME (srun -J) and its running
# step container, and prints the job id. Names, not "the first running job": an
# earlier job's container lingers a moment after its srun, and stale jobs may exist.
named_job() { squeue -h -t R -n "$1" -o %i | head -1; }
step_running() { "${CRISPCTL[@]}" ps --job "$1" | grep -q CONTAINER_RUNNING; }
running_job() {
  local job=
  for _ in $(seq 300); do job=$(named_job "$1"); [[ -n $job ]] && break; sleep 0.1; done
  [[ -n $job ]] && wait_until 30 step_running "$job" && echo "$job"
}
last_job() { scontrol show jobs -o 2>/dev/null | grep -o 'JobId=[0-9]*' | cut -d= -f2 | sort -n | tail -1; }
stat_of() { "${CRISPCTL[@]}" stats | awk -v k="$1" '$1 == k {print $2}'; }
job_finished() { scontrol show job "$1" 2>/dev/null | grep -qE 'JobState=(COMPLETED|FAILED|CANCELLED|TIMEOUT)'; }
# settle: no job is completing, so new jobs start at once (Slurm defers them meanwhile).
no_completing_job() { [[ -z $(squeue -h -t CG) ]]; }
settle() { wait_until 30 no_completing_job; }
one_crisp_line() { [[ $(grep -c '^crisp: ' <<<"$1") == 1 ]]; }
# expect_crisp_error WHAT TEXT: the last run failed with exactly one "crisp:" line, containing TEXT.
expect_crisp_error() {
  expect "$1: srun fails" equals "$((RC != 0))" 1
  expect "$1: one crisp: line" one_crisp_line "$ERR"
  expect "$1: says '$2'" contains "$ERR" "$2"
}

# wait_until SECONDS CMD...
wait_until() {
  local secs=$1; shift
  for _ in $(seq $((secs * 10))); do "$@" && return 0; sleep 0.1; done
  return 1
}

t() { # t NAME: runs test_NAME and reports it
  local name=$1
  [[ -n $only && $name != "$only" ]] && return
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

test_os_release_is_the_images() {
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" cat /etc/os-release
  expect "srun succeeds" equals "$RC" 0
  expect "prints the image's os-release" contains "$OUT" 'PRETTY_NAME="crisp test image (busybox)"'
  expect "not the host's" lacks "$OUT" "$(grep PRETTY_NAME /etc/os-release)"
  run as_user "${SRUN[@]}" --container-image="$DEBIAN_IMAGE" sh -c 'cat /etc/os-release; dpkg-query -W bash'
  expect "debootstrap image runs" equals "$RC" 0
  expect "its os-release is Debian 11" contains "$OUT" 'VERSION_CODENAME=bullseye'
}

test_tasks_share_one_container() {
  local host_ns; host_ns=$(readlink /proc/self/ns/mnt)
  run as_user "${SRUN[@]}" -n2 --container-image="$TEST_IMAGE" sh -c 'echo $SLURM_PROCID $(readlink /proc/self/ns/mnt)'
  expect "srun -n2 succeeds" equals "$RC" 0
  expect "two tasks report" equals "$(wc -l <<<"$OUT")" 2
  expect "task ranks 0 and 1" equals "$(cut -d' ' -f1 <<<"$OUT" | sort | tr '\n' ' ')" "0 1 "
  expect "one mount namespace for both" equals "$(cut -d' ' -f2 <<<"$OUT" | sort -u | wc -l)" 1
  expect "not the host's namespace" lacks "$OUT" "$host_ns"
}

test_stdio_and_exit_codes() {
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" sh -c 'echo to-stdout; echo to-stderr >&2'
  expect "stdout reaches srun" equals "$OUT" "to-stdout"
  expect "stderr reaches srun" contains "$ERR" "to-stderr"
  expect "stderr is not on stdout" lacks "$OUT" "to-stderr"
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" sh -c 'exit 3'
  expect "exit 3 fails srun" equals "$((RC != 0))" 1
  expect "srun reports exit code 3" contains "$ERR" "Exited with exit code 3"
}

test_slurm_env_and_image_env() {
  run as_user env LD_LIBRARY_PATH=/host/lib LANG=en_US.UTF-8 "${SRUN[@]}" -n2 --container-image="$TEST_IMAGE" \
    sh -c 'echo "$SLURM_PROCID|$SLURM_NTASKS|$SLURM_JOB_ID|$SLURM_STEP_ID|$PATH|$CRISP_IMAGE_VAR|${LD_LIBRARY_PATH-unset}|$LANG"'
  expect "srun succeeds" equals "$RC" 0
  local line0; line0=$(grep '^0|' <<<"$OUT")
  expect "SLURM_PROCID=0 and 1 set" equals "$(cut -d'|' -f1 <<<"$OUT" | sort | tr '\n' ' ')" "0 1 "
  expect "SLURM_NTASKS=2" equals "$(cut -d'|' -f2 <<<"$line0")" 2
  expect "SLURM_JOB_ID set" equals "$([[ $(cut -d'|' -f3 <<<"$line0") =~ ^[0-9]+$ ]] && echo y)" y
  expect "SLURM_STEP_ID=0" equals "$(cut -d'|' -f4 <<<"$line0")" 0
  expect "PATH from the image" equals "$(cut -d'|' -f5 <<<"$line0")" "/usr/bin:/bin:/image/bin"
  expect "image variable set" equals "$(cut -d'|' -f6 <<<"$line0")" "from-image"
  expect "host LD_LIBRARY_PATH dropped" equals "$(cut -d'|' -f7 <<<"$line0")" "unset"
  expect "image LANG wins by default" equals "$(cut -d'|' -f8 <<<"$line0")" "C.UTF-8"
  run as_user env LANG=en_US.UTF-8 "${SRUN[@]}" --container-image="$TEST_IMAGE" --container-env=LANG,PATH \
    sh -c 'echo "$LANG|$PATH"'
  expect "--container-env keeps the job's LANG" equals "${OUT%%|*}" "en_US.UTF-8"
  expect "--container-env keeps the job's PATH" lacks "$OUT" "/image/bin"
}

test_mounts_rw_and_ro() {
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" \
    --container-mounts=/var/tmp/crisp-it/rw:/rw,/var/tmp/crisp-it/ro:/data:ro \
    sh -c 'echo written-inside > /rw/out && cat /data/file && echo x > /data/new'
  expect "reads the ro mount" contains "$OUT" "read-only-data"
  expect "rw write reaches the host" equals "$(cat /var/tmp/crisp-it/rw/out 2>/dev/null)" "written-inside"
  expect "the file belongs to the user" equals "$(stat -c %U /var/tmp/crisp-it/rw/out 2>/dev/null)" "$TEST_USER"
  expect "ro write fails" equals "$((RC != 0))" 1
  expect "with Read-only file system" contains "$ERR" "Read-only file system"
  expect "nothing written to the ro source" equals "$(ls /var/tmp/crisp-it/ro)" "file"
}

test_workdir() {
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" sh -c 'pwd; echo made-in-job-dir > here'
  expect "starts in the job's directory" equals "$OUT" "$WORK"
  expect "which is the host's directory" equals "$(cat "$WORK/here" 2>/dev/null)" "made-in-job-dir"
  expect "no chdir complaint" lacks "$ERR" "couldn't chdir"
  ln -sfn "$WORK" "$WORK-link"
  run bash -c "cd '$WORK-link' && runuser -u '$TEST_USER' -- ${SRUN[*]} --container-image='$TEST_IMAGE' sh -c 'pwd; cat here; cd \$PWD && echo logical-path-ok'"
  expect "a directory reached through a symlink works too" equals "$OUT" "$WORK-link"$'\n'"made-in-job-dir"$'\n'"logical-path-ok"
  rm -f "$WORK-link"
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" --container-workdir=/etc sh -c 'pwd; echo $PWD'
  expect "--container-workdir applies" equals "$OUT" $'/etc\n/etc'
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" --container-workdir=/no/such/dir pwd
  expect_crisp_error "missing workdir" "crisp: cannot enter the working directory /no/such/dir"
}

test_concurrent_pulls_are_merged() {
  # A new image (its own 64 MB layer): the pull takes long enough to overlap.
  local tag=uncached-$RANDOM$RANDOM
  push_unique_image "crisp-test/busybox:$tag" 64
  local layer; layer=$(skopeo inspect --tls-verify=false --raw "docker://$REGISTRY/crisp-test/busybox:$tag" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["layers"][-1]["digest"])')
  settle
  local started0 merged0 cached0; started0=$(stat_of pulls_started); merged0=$(stat_of pulls_merged); cached0=$(stat_of pulls_cached)
  local log_lines0; log_lines0=$(wc -l <"$LOGS/registry.log")
  as_user "${SRUN[@]}" --container-image="$REGISTRY/crisp-test/busybox:$tag" test -f /payload >/tmp/crisp-it.a 2>&1 &
  local a=$!
  as_user "${SRUN[@]}" --container-image="$REGISTRY/crisp-test/busybox:$tag" test -f /payload >/tmp/crisp-it.b 2>&1 &
  local b=$!
  wait $a; local rca=$?; wait $b; local rcb=$?
  expect "both steps succeed" equals "$rca$rcb" 00
  expect "one CRI pull" equals "$(($(stat_of pulls_started) - started0))" 1
  expect "the other step waited on it" equals "$(($(stat_of pulls_merged) - merged0 + $(stat_of pulls_cached) - cached0))" 1
  expect "the second request overlapped the pull" equals "$(($(stat_of pulls_merged) - merged0))" 1
  local blob_gets; blob_gets=$(tail -n +"$((log_lines0 + 1))" "$LOGS/registry.log" | grep -c "GET /v2/crisp-test/busybox/blobs/$layer")
  expect "the registry served the new layer once ($layer)" equals "$blob_gets" 1
}

# push_unique_image NAME:TAG MB: the test image plus a layer of its own, which no node has.
push_unique_image() {
  local ref=$1 mb=$2 dir; dir=$(mktemp -d)
  skopeo copy --quiet --src-tls-verify=false "docker://$TEST_IMAGE" "oci:$dir/oci:base" &&
    umoci unpack --image "$dir/oci:base" "$dir/b" >/dev/null &&
    head -c "${mb}M" /dev/urandom >"$dir/b/rootfs/payload" &&
    umoci repack --image "$dir/oci:base" "$dir/b" &&
    skopeo copy --quiet --dest-tls-verify=false "oci:$dir/oci:base" "docker://$REGISTRY/$ref"
  local rc=$?
  rm -rf "$dir"
  return $rc
}

test_long_cold_pull_trips_no_slurm_timeout() {
  # Every blob takes 12 s through this proxy: the pull outlasts Slurm's MessageTimeout (10 s) twice over.
  local tag=slow-$RANDOM$RANDOM
  push_unique_image "crisp-test/busybox:$tag" 1
  python3 "$CRISP_SRC/tests/integration/slow_registry.py" 5001 5000 12 2>"$LOGS/slow-registry.log" &
  local proxy=$!
  wait_until 10 curl -sf -o /dev/null http://127.0.0.1:5001/v2/
  local t0=$SECONDS
  run as_user "${SRUN[@]}" --container-image="127.0.0.1:5001/crisp-test/busybox:$tag" sh -c 'test -f /payload && echo pulled-and-ran'
  local took=$((SECONDS - t0))
  kill "$proxy"; wait "$proxy" 2>/dev/null
  expect "the pull was slow (${took}s)" equals "$((took >= 20))" 1
  expect "the step still ran" equals "$OUT" "pulled-and-ran"
  expect "srun succeeded" equals "$RC" 0
  expect "no Slurm timeout" lacks "$ERR" "imed out"
}

test_nothing_left_after_a_job() {
  run as_user "${SRUN[@]}" -n2 --container-image="$TEST_IMAGE" true
  local job; job=$(last_job)
  expect "srun succeeds" equals "$RC" 0
  expect "the job completes" wait_until 30 job_finished "$job"
  expect "no sandbox or container of job $job in containerd" equals "$(cri_objects "$job")" 0
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

test_missing_image_fails_fast() {
  local t0=$SECONDS
  run as_user "${SRUN[@]}" --container-image="$REGISTRY/crisp-test/does-not-exist:1" true
  local job; job=$(last_job)
  expect "within 10 s" equals "$((SECONDS - t0 < 10))" 1
  expect_crisp_error "missing image" "crisp: image $REGISTRY/crisp-test/does-not-exist:1 was not found in its registry"
  expect "nothing left in containerd" equals "$(cri_objects "$job")" 0
}

test_malformed_input_rejected_before_allocation() {
  local before; before=$(last_job)
  run as_user "${SRUN[@]}" --container-image='UPPER/Case::x' true
  expect_crisp_error "bad image" "crisp: invalid image reference 'UPPER/Case::x'"
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" --container-mounts=/tmp:relative true
  expect_crisp_error "bad mount" "crisp: invalid --container-mounts entry '/tmp:relative'"
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" --container-mounts=/a:/b:bogus true
  expect_crisp_error "bad flag" "unknown flag 'bogus'"
  expect "no job was allocated" equals "$(last_job)" "$before"
  expect "srun never asked for resources" lacks "$ERR" "allocated resources"
}

test_inaccessible_mount_source() {
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" --container-mounts=/var/tmp/crisp-it/secret:/s cat /s/file
  local job; job=$(last_job)
  expect "the secret stays secret" lacks "$OUT" "top-secret"
  expect_crisp_error "unreadable source" "crisp: mount source /var/tmp/crisp-it/secret: Permission denied"
  expect "nothing left in containerd" equals "$(cri_objects "$job")" 0
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" --container-mounts=/no/such/src:/s true
  expect_crisp_error "missing source" "crisp: mount source /no/such/src: No such file or directory"
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
  local t0=$SECONDS
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" true
  local job; job=$(last_job)
  expect "after the idle timeout, not the pull timeout" equals "$((SECONDS - t0 < 40))" 1
  expect_crisp_error "crispd hung" "did not answer within 15 s: is it hung?"
  kill -CONT "$(cat "$RUN/crispd.pid")"
  expect "the job completes" wait_until 60 job_finished "$job"
  expect "what crispd made late is gone" wait_until 60 no_cri_objects "$job"
}

test_setuid_binary_grants_nothing() {
  expect "the probe is setuid root in the image" equals "$(stat_probe)" "4755 0"
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" /suid/probe
  expect "euid stays the user's" equals "$OUT" "uid=$(id -u "$TEST_USER") euid=$(id -u "$TEST_USER")"
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" sh -c 'grep NoNewPrivs /proc/self/status'
  expect "no_new_privs is set" contains "$OUT" "1"
}
stat_probe() { "${SRUN[@]}" --container-image="$TEST_IMAGE" stat -c '%a %u' /suid/probe 2>/dev/null; }

test_user_ids_inside() {
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" sh -c 'id -u; id -g; id -G | tr " " "\n" | sort -n | tr "\n" " "'
  expect "uid is the user's" equals "$(sed -n 1p <<<"$OUT")" "$(id -u "$TEST_USER")"
  expect "gid is the user's" equals "$(sed -n 2p <<<"$OUT")" "$(id -g "$TEST_USER")"
  expect "groups are the user's (with $TEST_GROUP)" equals "$(sed -n 3p <<<"$OUT")" "$(id -G "$TEST_USER" | tr ' ' '\n' | sort -n | tr '\n' ' ')"
}

test_non_root_cannot_create_containers() {
  run runuser -u "$TEST_USER" -- "$REQUEST_TOOL" "$CRISPD_SOCK" create 999999 "$TEST_IMAGE"
  expect "refused" equals "$RC" 1
  expect "permission denied" contains "$OUT" "reserved to root (slurmstepd): permission denied"
  run runuser -u "$TEST_USER" -- "$REQUEST_TOOL" "$CRISPD_SOCK" release-job 1
  expect "release refused too" contains "$OUT" "permission denied"
  expect "nothing created" equals "$(cri_objects 999999)" 0
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

test_users_see_only_their_jobs() {
  local name=crisp-it-root-$RANDOM
  srun -J "$name" --container-image="$TEST_IMAGE" sleep 3 >/dev/null 2>&1 &
  local pid=$!
  running_job "$name" >/dev/null
  expect "root sees root's step" equals "$("${CRISPCTL[@]}" ps | awk 'NR > 1 && $3 == 0' | wc -l)" 1
  expect "the test user does not" equals "$(runuser -u "$TEST_USER" -- "${CRISPCTL[@]}" ps | tail -n +2 | wc -l)" 0
  wait "$pid"
}

test_crispctl_pull() {
  run "${CRISPCTL[@]}" pull "$DEBIAN_IMAGE"
  expect "pull succeeds" equals "$RC" 0
  expect "names the image" contains "$OUT" "$DEBIAN_IMAGE ready in"
  expect "it is in containerd's store" contains "$("${CTR[@]}" images ls -q)" "$DEBIAN_IMAGE"
  run runuser -u "$TEST_USER" -- "${CRISPCTL[@]}" pull "$DEBIAN_IMAGE"
  expect "a user may not pull" contains "$ERR" "crisp: pulling an image is reserved to root"
  run "${CRISPCTL[@]}" pull "Not/Valid"
  expect "bad reference named" contains "$ERR" "crisp: invalid image reference 'Not/Valid'"
}

source "$CRISP_SRC/tests/integration/pyxis_tests.sh"
source "$CRISP_SRC/tests/integration/multinode_tests.sh"
source "$CRISP_SRC/tests/integration/gpu_tests.sh"

setup
t os_release_is_the_images
t tasks_share_one_container
t stdio_and_exit_codes
t slurm_env_and_image_env
t mounts_rw_and_ro
t workdir
t concurrent_pulls_are_merged
t long_cold_pull_trips_no_slurm_timeout
t nothing_left_after_a_job
t concurrent_steps_of_one_job
t scancel_kills_and_cleans_up
t missing_image_fails_fast
t malformed_input_rejected_before_allocation
t inaccessible_mount_source
t crispd_down_times_out_with_a_message
t hung_crispd_times_out_with_a_message
t setuid_binary_grants_nothing
t user_ids_inside
t non_root_cannot_create_containers
t restarted_crispd_loses_nothing
t users_see_only_their_jobs
t crispctl_pull
t container_name_kept_across_steps
t container_scope_global
t remap_root
t writable_and_readonly
t mount_home
t tmpfs_and_relative_mounts
t entrypoint
t environment_variables
t unsupported_and_malformed_options
t plugstack_arguments
t sbatch_runs_the_script_inside
t salloc_steps_use_the_image
t pytorch_variables
t pmix_directory_reaches_the_tasks
t image_reference_forms
t registry_credentials
t two_nodes_one_container_each
t mpi_pmix_openmpi
t mpi_pmi2_mpich
t gpus_follow_the_allocation
t rdma_devices
echo "integration: $passed passed, $failed failed"
((failed == 0))
