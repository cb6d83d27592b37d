# Attacks on crispd by the test user, each of which must fail safely: refused
# or harmless, crispd up and serving the next step, nothing left behind.
# Sourced by run.sh.

crispd_pid() { cat "$RUN/crispd.pid"; }
# crispd_alive PID: the same crispd still runs, and is not stopped.
crispd_alive() { [[ -d /proc/$1 ]] && ! grep -q '^State:[[:space:]]*T' "/proc/$1/status"; }
# After an attack that may have stopped or killed crispd: it runs again, as it was.
recover_crispd() {
  kill -CONT "$(crispd_pid)" 2>/dev/null
  crispd_answers || start_crispd
}
next_step_runs() { as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" true 2>/dev/null; }

# Hole 1: a thread that takes a user's credentials can be signalled by that
# user, and a FIFO as a credentials file would hold it open for ever.
test_user_cannot_signal_crispd() {
  local home=/home/$TEST_USER pid; pid=$(crispd_pid)
  rm -rf "$home/.config/enroot" "$home/.docker"
  as_user mkdir -p "$home/.config/enroot" "$home/.docker"
  as_user mkfifo "$home/.config/enroot/.credentials" "$home/.docker/config.json"
  drop_private_image
  # The user signals every thread of crispd, again and again, for as long as the step takes.
  as_user bash -c 'hits=0; end=$((SECONDS + 8)); while ((SECONDS < end)); do
      for t in /proc/'"$pid"'/task/*; do kill -STOP "${t##*/}" 2>/dev/null && hits=$((hits + 1)); kill -KILL "${t##*/}" 2>/dev/null && hits=$((hits + 1)); done
    done; echo "$hits"' >/tmp/crisp-it.hits 2>/dev/null &
  local attacker=$!
  local t0=$SECONDS
  run as_user "${SRUN[@]}" --container-image="$PRIVATE_IMAGE" true
  expect_crisp_error "a FIFO as the credentials file" "$home/.config/enroot/.credentials is not a regular file"
  expect "answered at once (in $((SECONDS - t0)) s)" equals "$((SECONDS - t0 < 10))" 1
  wait "$attacker"
  expect "no signal reached crispd ($(cat /tmp/crisp-it.hits) did)" equals "$(cat /tmp/crisp-it.hits)" 0
  expect "crispd runs on, not stopped" crispd_alive "$pid"
  recover_crispd
  rm -rf "$home/.config/enroot" "$home/.docker"
  expect "the next step runs" next_step_runs
}

# Hole 2: a source checked as the user, then, while the image is pulled, its
# directory swapped for a symlink to what the user cannot read, or to a place
# where the source does not exist (which containerd would create, as root).
test_swapped_mount_source_mounts_nothing_unreadable() {
  local tag=swap-$RANDOM$RANDOM name=made-by-root-$RANDOM
  serve_slowly "$tag" 3
  local proxy=$SLOW_PROXY
  # Readable in itself, but inside a directory the user cannot search.
  mkdir -p /var/tmp/crisp-it/secret/inner && echo top-secret >/var/tmp/crisp-it/secret/inner/file
  chmod 0755 /var/tmp/crisp-it/secret/inner && chmod 0644 /var/tmp/crisp-it/secret/inner/file
  as_user mkdir -p "$WORK/d1" "$WORK/d2/$name"
  echo mine | as_user tee "$WORK/d1/file" >/dev/null
  as_user "${SRUN[@]}" --container-image="127.0.0.1:5001/crisp-test/busybox:$tag" \
    --container-mounts="$WORK/d1:/m,$WORK/d2/$name:/m2" sh -c 'cat /m/file; ls /m2' >/tmp/crisp-it.swap 2>&1 &
  local srun=$!
  sleep 2  # crispd has checked both; the pull takes seconds more
  as_user mv "$WORK/d1" "$WORK/d1.old"
  as_user ln -s /var/tmp/crisp-it/secret/inner "$WORK/d1"
  as_user mv "$WORK/d2" "$WORK/d2.old"
  as_user ln -s /var/tmp/crisp-it "$WORK/d2"
  wait "$srun"
  kill "$proxy"; wait "$proxy" 2>/dev/null
  expect "the step ran with what the user checked" contains "$(cat /tmp/crisp-it.swap)" "mine"
  expect "not the secret" lacks "$(cat /tmp/crisp-it.swap)" "top-secret"
  expect "root created no missing source" test ! -e "/var/tmp/crisp-it/$name"
  rm -rf "/var/tmp/crisp-it/$name"
}

# Hole 3: malformed credentials files, each answered with one line naming it.
test_malformed_credentials_answered_with_a_line() {
  local home=/home/$TEST_USER pid; pid=$(crispd_pid)
  local docker=$home/.docker/config.json netrc=$home/.config/enroot/.credentials
  drop_private_image
  local -A cases=(
    ['{"auths":{"127.0.0.1:5002":{"username":1}}}']='auths["127.0.0.1:5002"].username is not a string'
    ['{"auths":{"127.0.0.1:5002":{"auth":5}}}']='auths["127.0.0.1:5002"].auth is not a string'
    ['{"auths":[1]}']='"auths" is not an object'
    ['[]']='not a JSON object'
    ['{"auths":']='not valid JSON'
  )
  local json
  for json in "${!cases[@]}"; do
    rm -rf "$home/.config/enroot" "$home/.docker"
    as_user mkdir -p "$home/.docker"
    printf '%s' "$json" | as_user tee "$docker" >/dev/null
    run as_user "${SRUN[@]}" --container-image="$PRIVATE_IMAGE" true
    expect_crisp_error "config.json $json" "$docker: ${cases[$json]}; fix or remove it"
  done
  rm -rf "$home/.docker"
  as_user mkdir -p "$home/.config/enroot"
  printf 'machine %s login' "$AUTH_REGISTRY" | as_user tee "$netrc" >/dev/null
  run as_user "${SRUN[@]}" --container-image="$PRIVATE_IMAGE" true
  expect_crisp_error "a netrc cut short" "$netrc: it ends with 'login' and no value after it"
  rm -rf "$home/.config/enroot"
  expect "the same crispd runs on" crispd_alive "$pid"
  expect "the next step runs" next_step_runs
}

# Hole 6: a user holding a thousand connections, and sending a huge frame header.
refusals_logged() { grep -c "refused a connection of uid $(id -u "$TEST_USER")" "$LOGS/crispd.log"; }
# crispd_connections: how many connections crispd holds open on its socket, of all users (its ends, in ss).
crispd_connections() { ss -xpH src "$CRISPD_SOCK" | grep -c "pid=$(crispd_pid),"; }
crispd_connections_at_most() { (($(crispd_connections) <= $1)); }
test_connection_flood_does_not_starve_steps() {
  local pid refusals open0; pid=$(crispd_pid) refusals=$(refusals_logged) open0=$(crispd_connections)
  rm -f /tmp/crisp-it.flood  # the wait below must not find an earlier run's "held"
  as_user python3 - "$CRISPD_SOCK" crisp-it-flood >/tmp/crisp-it.flood 2>&1 <<'EOF' &
import socket, struct, sys, time
big = socket.socket(socket.AF_UNIX)
big.connect(sys.argv[1])
big.sendall(struct.pack(">I", 4 << 20))
held = []
for _ in range(1000):
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(sys.argv[1])
        held.append(s)
    except OSError:
        pass
print("held", len(held), flush=True)
time.sleep(20)
EOF
  local flood=$!
  wait_until 20 grep -q held /tmp/crisp-it.flood
  local flooding; flooding=$(crispd_connections)
  expect "crispd holds the flood's connections, as ss shows ($flooding, $open0 before)" equals "$((flooding >= 16))" 1
  local t0=$SECONDS
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" echo served
  expect "a containerized step runs meanwhile" equals "$OUT" served
  expect "promptly ($((SECONDS - t0)) s)" equals "$((SECONDS - t0 < 15))" 1
  run as_user "${CRISPCTL[@]}" ps
  expect "the flooding user is refused, with a line naming the limit and the user" contains "$OUT$ERR" \
    "crisp: crispd has too many connections open: uid $(id -u "$TEST_USER") holds the per-user limit of 16: try again"
  pkill -u "$TEST_USER" -f crisp-it-flood; wait "$flood" 2>/dev/null
  expect "the same crispd runs on" crispd_alive "$pid"
  local logged=$(( $(refusals_logged) - refusals ))
  expect "it says why it refused, in a few lines, not a thousand ($logged)" equals "$((logged >= 1 && logged <= 45))" 1
  expect "and the huge frame" grep -q "exceeds the limit of 65536" "$LOGS/crispd.log"
  expect "the user is served again once it lets go" wait_until 15 as_user "${CRISPCTL[@]}" ps >/dev/null 2>&1
  # crispd as the test found it: the next test's steps must not meet the flood's last connections.
  wait_until 20 crispd_connections_at_most "$open0"
  expect "its connections are gone from crispd within 20 s ($(crispd_connections) open, $open0 before)" \
    crispd_connections_at_most "$open0"
}

# Hole 8: an entrypoint that floods its output (100 MB), then leaves a process
# writing for ever: what crispd keeps and shows is bounded, /run does not fill.
log_dir_bytes() { du -sb /run/crisp/logs 2>/dev/null | cut -f1; }
# What crisp's own tree in /run holds (the logs, containerd's state, mounts' staging): not the
# free space of /run, which every other process on the node changes too.
crisp_run_bytes() { du -sbx /run/crisp 2>/dev/null | cut -f1; }
test_entrypoint_output_is_bounded() {
  local name=crisp-it-noisy-$RANDOM run_before; run_before=$(crisp_run_bytes)
  # Gone first: the background srun truncates it only once it runs, and the wait below must
  # not find an earlier run's "started" (it then measured the flood as the quiet after it).
  rm -f /tmp/crisp-it.noisy /tmp/crisp-it.noisy.err
  as_user "${SRUN[@]}" -J "$name" --container-image="$REGISTRY/crisp-test/noisy-entrypoint:latest" \
    --container-entrypoint --container-entrypoint-log sh -c 'echo started; sleep 4; echo ran' \
    >/tmp/crisp-it.noisy 2>/tmp/crisp-it.noisy.err &
  local srun=$! peak=0 size
  # While the entrypoint floods: the logs stay small.
  while ! grep -q started /tmp/crisp-it.noisy 2>/dev/null && kill -0 "$srun" 2>/dev/null; do
    size=$(log_dir_bytes); ((size > peak)) && peak=$size
    sleep 0.2
  done
  # The task runs: the background writer's output goes nowhere.
  local a b; a=$(log_dir_bytes); sleep 2; b=$(log_dir_bytes)
  local run_during; run_during=$(crisp_run_bytes)
  wait "$srun"
  expect "the step ran" equals "$(cat /tmp/crisp-it.noisy)" $'started\nran'
  local shown; shown=$(wc -c </tmp/crisp-it.noisy.err)
  expect "at most 1 MiB of the log shown ($shown bytes)" equals "$((shown <= 1100000))" 1
  expect "the end of it, not the start" contains "$(cat /tmp/crisp-it.noisy.err)" "the flood is over"
  expect "the logs stayed under 8 MiB while it flooded 100 MB (peak $peak bytes)" equals "$((peak <= 8 << 20))" 1
  expect "the background writer's output is kept nowhere ($a, then $b bytes)" equals "$((b <= a && b < 1 << 20))" 1
  expect "crisp's files in /run grew by less than 8 MiB ($run_before, then $run_during bytes)" \
    equals "$(( run_during - run_before < (8 << 20) ))" 1
}

# Hole 10: a named container whose job ends while its image is pulled (the
# step's slurmstepd killed, the job cancelled, its epilog run) must not
# outlive the job once the create finishes.
test_cancelled_named_create_does_not_linger() {
  local tag=cancel-$RANDOM$RANDOM name=crisp-it-cancel-$RANDOM
  with_plugstack container_scope=job
  serve_slowly "$tag" 5
  local proxy=$SLOW_PROXY
  as_user "${SRUN[@]}" -J "$name" --container-name=dev --container-image="127.0.0.1:5001/crisp-test/busybox:$tag" \
    true >/dev/null 2>&1 &
  local srun=$! job=
  for _ in $(seq 100); do job=$(named_job "$name"); [[ -n $job ]] && break; sleep 0.1; done
  sleep 2  # the pull is under way
  pkill -KILL -f "slurmstepd: \[$job\.0\]"
  scancel "$job"
  wait "$srun"
  expect "the job ends" wait_until 60 job_finished "$job"
  sleep 15  # the pull ends meanwhile, and the create with it
  expect "no container of the cancelled job is left" wait_until 20 no_cri_objects "$job"
  kill "$proxy"; wait "$proxy" 2>/dev/null
  restore_plugstack
}

# Hole 7: an image pulled with one user's credentials must not run for a user
# whose credentials its registry does not accept. User A is the test user,
# user B is root; both on this node, where A's pull put the image.
blob_downloads() { grep -c '"GET /v2/crisp-test/private/blobs/' "$LOGS/registry-auth.log"; }
test_private_image_needs_the_users_own_credentials() {
  local home=/home/$TEST_USER node; node=$(hostname -s)
  rm -rf "$home/.config/enroot" "$home/.docker" /root/.config/enroot /root/.docker
  drop_private_image
  as_user mkdir -p "$home/.config/enroot"
  echo "machine $AUTH_REGISTRY login $AUTH_USER password $AUTH_PASSWORD" | as_user tee "$home/.config/enroot/.credentials" >/dev/null
  run as_user "${SRUN[@]}" -w "$node" --container-image="$PRIVATE_IMAGE" grep -o private /etc/os-release
  expect "user A pulls it with their credentials" equals "$OUT" private
  local downloads; downloads=$(blob_downloads)
  run "${SRUN[@]}" -w "$node" --container-image="$PRIVATE_IMAGE" grep -o private /etc/os-release
  expect_crisp_error "user B without credentials" "image $PRIVATE_IMAGE is private on this node"
  expect "... sees nothing of it" lacks "$OUT" private
  mkdir -p /root/.config/enroot
  echo "machine $AUTH_REGISTRY login $AUTH_USER password wrong" >/root/.config/enroot/.credentials
  run "${SRUN[@]}" -w "$node" --container-image="$PRIVATE_IMAGE" true
  expect_crisp_error "user B with credentials the registry refuses" "the registry $AUTH_REGISTRY refused access to image $PRIVATE_IMAGE"
  echo "machine $AUTH_REGISTRY login $AUTH_USER password $AUTH_PASSWORD" >/root/.config/enroot/.credentials
  run "${SRUN[@]}" -w "$node" --container-image="$PRIVATE_IMAGE" grep -o private /etc/os-release
  expect "user B with credentials the registry accepts runs it" equals "$OUT" private
  expect "without a second download" equals "$(blob_downloads)" "$downloads"
  rm -rf "$home/.config/enroot" /root/.config/enroot
}

# Hole 5: any user can bind a socket named like the step's PMIx server
# (stepd.slurm.pmix.JOB.STEP) in a directory of theirs, next to a pmix.JOB.STEP
# directory of their making; only slurmstepd's own socket may say where it is.
test_forged_pmix_socket_is_not_followed() {
  local name=crisp-it-pmix-$RANDOM node; node=$(hostname -s)
  # The job first, so that the forged sockets name its first step (JOB.0) before it starts.
  as_user salloc --no-shell -J "$name" -w "$node" -n2 >/dev/null 2>&1
  local job; job=$(last_job_named "$name")
  is_job_id "$job" || return
  rm -rf /tmp/crisp-it-evil
  # Many directories, so that one of the forged sockets is listed before the real one.
  as_user python3 - "$job" >/dev/null <<'EOF2' &
import os, socket, sys, time
job = int(sys.argv[1])
held = []
for d in range(150):
    base = f"/tmp/crisp-it-evil/d{d}"
    os.makedirs(f"{base}/pmix.{job}.0", exist_ok=True)
    open(f"{base}/pmix.{job}.0/forged", "w").close()
    s = socket.socket(socket.AF_UNIX)
    s.bind(f"{base}/stepd.slurm.pmix.{job}.0")
    s.listen(1)
    held.append(s)
print("bound", flush=True)
time.sleep(30)
EOF2
  local binder=$!
  wait_until 20 test -S "/tmp/crisp-it-evil/d149/stepd.slurm.pmix.$job.0"
  run as_user "${SRUN[@]}" --jobid "$job" --mpi=pmix -n2 --container-image="$TEST_IMAGE" \
    sh -c 'echo "step-$SLURM_JOB_ID.$SLURM_STEP_ID"; ls -d "$PMIX_SERVER_TMPDIR" >/dev/null && echo ok-$PMIX_RANK
      ls -R /tmp/crisp-it-evil 2>/dev/null'
  pkill -u "$TEST_USER" -f "crisp-it-evil" 2>/dev/null; kill "$binder" 2>/dev/null; wait "$binder" 2>/dev/null
  scancel "$job"
  wait_until 30 job_finished "$job"
  expect "it ran as step $job.0, which the forged sockets name" contains "$OUT" "step-$job.0"
  expect "the step's own PMIx directory reaches every task" equals "$(grep ok- <<<"$OUT" | sort)" $'ok-0\nok-1'
  expect "the forged one is not mounted" lacks "$OUT" forged
  rm -rf /tmp/crisp-it-evil
}

# Hole 4: what an image's entrypoint leaves running in the background is in
# the job's cgroups (its CPU, memory and device limits) and dies with the job.
bg_loop_pids() { pgrep -f "crisp-bg.sh" -u "$TEST_USER"; }
no_bg_loop() { [[ -z $(bg_loop_pids) ]]; }
test_container_processes_stay_in_the_jobs_cgroup() {
  local name=crisp-it-bg-$RANDOM
  as_user "${SRUN[@]}" -J "$name" --container-image="$REGISTRY/crisp-test/daemon-entrypoint:latest" \
    --container-entrypoint sleep 300 >/dev/null 2>&1 &
  local srun=$! job pid
  job=$(running_job "$name")
  wait_until 10 bg_loop_pids >/dev/null
  pid=$(bg_loop_pids | head -1)
  expect "the entrypoint's background loop runs" test -n "$pid"
  # Moved there by the step's first task, once it starts.
  # devices: Slurm constrains it in every release (memory only where the job has memory
  # allocated from 24.11 on: the dev cluster schedules cores only).
  expect "its devices cgroup is the step's" wait_until 10 grep -qE "devices:/slurm[^/]*/uid_[0-9]+/job_$job/step_0\$" "/proc/$pid/cgroup"
  expect "and its devices' and freezer's" equals \
    "$(grep -cE "(devices|freezer):/slurm[^/]*/uid_[0-9]+/job_$job/step_0\$" "/proc/$pid/cgroup")" 2
  scancel "$job"; wait "$srun"
  expect "nothing of it runs after scancel" wait_until 20 no_bg_loop
  pkill -u "$TEST_USER" -f crisp-bg.sh 2>/dev/null
}

test_named_container_processes_die_with_the_job() {
  local name=crisp-it-bgn-$RANDOM
  with_plugstack container_scope=job
  as_user "${SRUN[@]}" -J "$name" --container-name=svc --container-image="$REGISTRY/crisp-test/daemon-entrypoint:latest" \
    --container-entrypoint sleep 300 >/dev/null 2>&1 &
  local srun=$! job pid
  job=$(running_job "$name")
  wait_until 10 bg_loop_pids >/dev/null
  pid=$(bg_loop_pids | head -1)
  expect "a named container's background loop is in its job's cgroup" \
    wait_until 10 grep -qE "devices:/slurm[^/]*/uid_[0-9]+/job_$job\$" "/proc/$pid/cgroup"
  scancel "$job"; wait "$srun"
  expect "the job ends" wait_until 30 job_finished "$job"
  expect "nothing of it runs once the job has ended" no_bg_loop
  pkill -u "$TEST_USER" -f crisp-bg.sh 2>/dev/null
  restore_plugstack
}

# runc 1.2 and later (containerd 2.x's) remount a bind with the spec's options alone, clearing
# the read-only, nosuid, nodev and noexec its source has on the host: a user's bind of an
# admin's read-only mount was writable in the container (found on Slurm 26.05 + runc 1.3).
test_read_only_host_mount_stays_read_only() {
  local src=/var/tmp/crisp-it/ro-src at=/var/tmp/crisp-it/ro-view
  mkdir -p "$src" "$at" && chmod 0777 "$src" && rm -f "$src/written"
  mount --bind "$src" "$at" && mount -o remount,bind,ro,nosuid,nodev "$at"
  "${CRISPCTL[@]}" rm --spares >/dev/null  # a container made for the step, not a claimed spare
  run as_user "${SRUN[@]}" -w "$(hostname -s)" --container-image="$TEST_IMAGE" --container-mounts="$at:/ro" \
    sh -c 'touch /ro/written 2>/dev/null && echo WROTE; awk "\$5 == \"/ro\" {print \$6}" /proc/self/mountinfo'
  umount "$at"
  expect "the step could not write through the host's read-only mount" lacks "$OUT" WROTE
  expect "... nothing was written there" test ! -e "$src/written"
  expect "... its mount keeps the host's ro, nosuid and nodev" contains "$OUT" "ro,nosuid,nodev"
  expect "the next step runs" next_step_runs
}
