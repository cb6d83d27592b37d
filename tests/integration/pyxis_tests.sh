# Integration tests of the Pyxis option surface, sourced by run.sh (its helpers in lib.sh).

PLUGSTACK=/etc/slurm/plugstack.conf.d/crisp.conf
# with_plugstack ARGS...: the plugin's plugstack.conf line with extra arguments, until
# restore_plugstack. Every job ends first: its epilog reads the line too.
with_plugstack() {
  settle
  echo "required $SLURM_PLUGINDIR/spank_crisp.so socket=$CRISPD_SOCK $*" >"$PLUGSTACK"
}
restore_plugstack() { with_plugstack; }

# in_allocation SCRIPT: runs SCRIPT as the test user inside one salloc job (its steps share the job).
in_allocation() { run as_user timeout 180 salloc -Q -N1 bash -c "$1"; }

test_container_name_kept_across_steps() {
  with_plugstack container_scope=job
  in_allocation "
    srun --container-name=dev --container-image=$TEST_IMAGE sh -c 'echo kept > /tmp/kept'
    echo step1=\$?
    echo joined=\$(srun --container-name=dev cat /tmp/kept)
    echo no_exec=\$(srun --container-name=dev:no_exec cat /tmp/kept)
    echo unnamed=\$(srun --container-image=$TEST_IMAGE cat /tmp/kept 2>/dev/null || echo missing)
    srun --container-name=dev:create --container-image=$TEST_IMAGE true; echo create=\$?
    srun --container-name=other:exec true; echo exec=\$?
    srun --container-name=dev --container-mounts=/var/tmp/crisp-it/ro:/ro true
    echo job=\$SLURM_JOB_ID"
  expect "the first step makes it" contains "$OUT" "step1=0"
  expect "a later step sees its files" contains "$OUT" "joined=kept"
  expect ":no_exec reuses its filesystem" contains "$OUT" "no_exec=kept"
  expect "an unnamed step starts fresh" contains "$OUT" "unnamed=missing"
  expect ":create on an existing name fails" contains "$OUT" "create=1"
  expect "... saying so" contains "$ERR" "crisp: a container named dev already exists on this node"
  expect ":exec without one fails" contains "$OUT" "exec=1"
  expect "... saying so" contains "$ERR" "crisp: there is no container named other on this node"
  expect "mounts on a joined container are reported, not silently dropped" contains "$ERR" \
    "crisp: --container-mounts not applied: the step joined the existing container dev"
  local job; job=$(grep -o 'job=[0-9]*' <<<"$OUT" | cut -d= -f2)
  expect "the job's end removes it (container_scope=job)" wait_until 20 no_cri_objects "$job"
  restore_plugstack
}

# Pyxis's default scope: a named container outlives its job, for the user's next job on the node.
test_container_scope_global_by_default() {
  run as_user "${SRUN[@]}" --container-name=glob --container-image="$TEST_IMAGE" sh -c 'echo from-job-1 > /tmp/g'
  settle
  run as_user "${SRUN[@]}" --container-name=glob cat /tmp/g
  expect "a later job joins the user's container" equals "$OUT" "from-job-1"
  run runuser -u "$TEST_USER" -- "${CRISPCTL[@]}" ps
  expect "crispctl ps lists it by name" contains "$OUT" "name=glob"
  run runuser -u "$TEST_USER" -- "${CRISPCTL[@]}" rm glob
  expect "its user removes it" equals "$RC" 0
  expect "nothing named is left" equals "$("${CTR[@]}" containers ls -q 'labels."crisp.slurm/name"==glob' | wc -l)" 0
}

test_remap_root() {
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" --container-remap-root \
    sh -c 'id -u; echo by-root > remapped; cat /proc/self/status | grep NoNewPrivs'
  expect "uid 0 inside" equals "$(head -1 <<<"$OUT")" 0
  expect "a file it makes is the user's on the host" equals "$(stat -c %U "$WORK/remapped" 2>/dev/null)" "$TEST_USER"
  expect "no new privileges still" contains "$OUT" "NoNewPrivs:	1"
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" --no-container-remap-root id -u
  expect "--no-container-remap-root keeps the uid" equals "$OUT" 2001
  # A node that forbids user namespaces: tests/unit/join_test.cc (this machine's sysctl is read-only).
}

test_writable_and_readonly() {
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" --container-writable sh -c 'echo x > /tmp/w && cat /tmp/w'
  expect "--container-writable: the root filesystem takes writes" equals "$OUT" x
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" --container-readonly sh -c 'echo x > /tmp/w'
  expect "--container-readonly: it does not" contains "$ERR" "Read-only file system"
  local name=crisp-it-conflict-$RANDOM
  run as_user "${SRUN[@]}" -J "$name" --container-image="$TEST_IMAGE" --container-writable --container-readonly true
  expect_crisp_error "both" "crisp: --container-writable and --container-readonly conflict"
  expect "rejected before allocation" no_job_named "$name"
}

test_mount_home() {
  echo home-marker >"/home/$TEST_USER/crisp-home-marker" && chown "$TEST_USER:" "/home/$TEST_USER/crisp-home-marker"
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" --container-mount-home cat "/home/$TEST_USER/crisp-home-marker"
  expect "--container-mount-home shows the home" equals "$OUT" home-marker
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" --no-container-mount-home \
    sh -c "cat /home/$TEST_USER/crisp-home-marker 2>&1 || echo absent"
  expect "--no-container-mount-home hides it" contains "$OUT" absent
  rm -f "/home/$TEST_USER/crisp-home-marker"
}

# Pyxis's umount:DST (mounts.bats): what --container-mount-home mounted is not there; an entry
# after it may mount there again; nothing mounted at DST is one line, or nothing with nofail.
test_umount_entries() {
  local mounted='grep -c " /root " /proc/self/mountinfo || true'
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" --container-mount-home --container-remap-root sh -c "$mounted"
  expect "--container-mount-home with --container-remap-root mounts the home at /root" equals "$OUT" 1
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" --container-mount-home --container-remap-root \
    --container-mounts=umount:/root sh -c "$mounted"
  expect "umount:/root: it is not mounted" equals "$RC $OUT" "0 0"
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" --container-mount-home --container-remap-root \
    --container-mounts=umount:/root,/var/tmp/crisp-it/ro:/root:ro sh -c "$mounted; cat /root/file"
  expect "an entry after it mounts there again" equals "$OUT" $'1\nread-only-data'
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" --container-mounts=umount:/opt true
  expect_crisp_error "umount of what crisp did not mount" "--container-mounts umount:/opt: nothing crisp mounts is at /opt"
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" --container-mounts=umount:/opt:nofail echo ran
  expect "... with nofail, the step runs" equals "$RC $OUT" "0 ran"
}

# A step crisp cannot run fails as Slurm's own failures do (srun's status, the job FAILED with
# its exit code) and prints crisp's line and srun's exit line, none of Slurm's SPANK errors.
# batch_job OPTIONS: a batch job of `true` with #SBATCH OPTIONS (words), waited for (sbatch_wait).
batch_job() {
  local script=$WORK/failing-batch.sh
  { echo '#!/bin/sh'; printf '#SBATCH %s\n' $1; echo "#SBATCH --output=$WORK/failing-%j.out"; echo true; } >"$script"
  sbatch_wait "$script" failing
}
state_of() { scontrol -o show job "$1" | grep -oE '(JobState|ExitCode)=[^ ]*' | tr '\n' ' '; }
test_a_failed_step_is_one_line_and_failed_for_slurm() {
  run as_user "${SRUN[@]}" --container-image=127.0.0.1:5000/crisp-test/nosuch:1 true
  expect_crisp_error "a missing image" "127.0.0.1:5000/crisp-test/nosuch:1"
  run as_user "${SRUN[@]}" -n3 --container-image="$TEST_IMAGE" --container-mounts=/nonexistent-crisp/path/foo:/mnt true
  expect_crisp_error "a missing mount source, three tasks" "--container-mounts: source path does not exist: /nonexistent-crisp/path/foo"
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" --container-mounts=/root/crisp-it:/mnt true
  expect_crisp_error "a source the user may not reach" "mount source /root/crisp-it: Permission denied"
  # An image the registry refuses and a bad --container-name mode in srun: test_registry_credentials,
  # test_unsupported_and_malformed_options (expect_crisp_error checks every such line). In sbatch:
  local home=/home/$TEST_USER what options
  rm -rf "$home/.config/enroot" "$home/.docker"
  drop_private_image
  for what in "missing image|--container-image=127.0.0.1:5000/crisp-test/nosuch:1" \
    "missing mount source|--container-image=$TEST_IMAGE --container-mounts=/nonexistent-crisp/foo:/mnt" \
    "refused image|--container-image=$PRIVATE_IMAGE"; do
    options=${what#*|} what=${what%%|*}
    batch_job "$options"
    expect "a batch job with a $what ends FAILED, its exit code non-zero" matches "$(state_of "$JOB")" \
      '^JobState=FAILED ExitCode=[1-9][0-9]*:0 $'
    expect "... its output is crisp's line alone" equals "$(grep -c . <<<"$LOG") $(grep -c '^crisp: ' <<<"$LOG")" "1 1"
  done
  run as_user sbatch --container-image="$TEST_IMAGE" --container-name=x:sometimes --wrap true
  expect_crisp_error "sbatch with a bad --container-name mode" "unknown mode 'sometimes'"
  expect "... submits nothing" lacks "$OUT" "Submitted"
}

# no_tmpfs_of JOB: no tmpfs of any step of JOB is left (crispd's /run/crisp/tmpfs/JOB.STEP).
no_tmpfs_of() { is_job_id "$1" && ! compgen -G "/run/crisp/tmpfs/$1.*" >/dev/null; }
test_tmpfs_and_relative_mounts() {
  local name=crisp-it-tmpfs-$RANDOM
  as_user mkdir -p "$WORK/sub" && echo relative-data | as_user tee "$WORK/sub/f" >/dev/null
  run as_user "${SRUN[@]}" -J "$name" --container-image="$TEST_IMAGE" --container-mounts=tmpfs:/scratch,./sub:/sub:ro \
    sh -c 'grep " /scratch " /proc/mounts | cut -d" " -f1,3; echo t > /scratch/f && cat /scratch/f; cat /sub/f'
  expect "a tmpfs at /scratch" contains "$OUT" "tmpfs tmpfs"
  expect "the user writes it" contains "$OUT" $'\nt\n'
  expect "./sub is the job directory's" contains "$OUT" relative-data
  expect "the tmpfs goes with the step" wait_until 20 no_tmpfs_of "$(last_job_named "$name")"
}

test_entrypoint() {
  local img=$REGISTRY/crisp-test/entrypoint:latest
  run as_user "${SRUN[@]}" -n3 --container-image="$img" --container-entrypoint \
    sh -c 'echo "$CRISP_FROM_ENTRYPOINT $(wc -l < /state/entrypoint-runs)"'
  expect "runs once per container, for three tasks" equals "$(sort -u <<<"$OUT")" "yes 1"
  expect "its output is not shown by default" lacks "$ERR" "entrypoint says hello"
  run as_user "${SRUN[@]}" --container-image="$img" sh -c 'echo "${CRISP_FROM_ENTRYPOINT-none} $(cat /state/entrypoint-runs 2>/dev/null | wc -l)"'
  expect "off by default, as in Pyxis" equals "$OUT" "none 0"
  with_plugstack execute_entrypoint=1
  run as_user "${SRUN[@]}" --container-image="$img" --container-entrypoint-log true
  expect "execute_entrypoint=1 turns it on; --container-entrypoint-log shows its output" contains "$ERR" \
    "entrypoint says hello on stderr"
  expect "... both streams" contains "$ERR" "entrypoint ran as uid 2001"
  run as_user "${SRUN[@]}" --container-image="$img" --no-container-entrypoint sh -c 'echo ${CRISP_FROM_ENTRYPOINT-none}'
  expect "--no-container-entrypoint wins over the plugstack default" equals "$OUT" none
  restore_plugstack
  run as_user "${SRUN[@]}" --container-image="$REGISTRY/crisp-test/bad-entrypoint:latest" --container-entrypoint true
  expect_crisp_error "failing entrypoint" "exited before it ran the holder (it must end with exec"
  expect "its output explains why" contains "$ERR" "its output ends: setup failed"
}

test_environment_variables() {
  run as_user env PYXIS_CONTAINER_IMAGE="$TEST_IMAGE" CRISP_CONTAINER_WORKDIR=/etc "${SRUN[@]}" sh -c 'grep PRETTY /etc/os-release; pwd'
  expect "PYXIS_CONTAINER_IMAGE selects the image" contains "$OUT" "crisp test image (busybox)"
  expect "CRISP_CONTAINER_WORKDIR applies" contains "$OUT" $'\n/etc'
  run as_user env PYXIS_CONTAINER_IMAGE="$DEBIAN_IMAGE" "${SRUN[@]}" --container-image="$TEST_IMAGE" grep -c ^ID=crisp-busybox /etc/os-release
  expect "the command line wins" equals "$OUT" 1
  local name=crisp-it-bad-variable-$RANDOM
  run as_user env PYXIS_CONTAINER_IMAGE="$TEST_IMAGE" PYXIS_CONTAINER_WRITABLE=maybe "${SRUN[@]}" -J "$name" true
  expect_crisp_error "bad variable" "crisp: PYXIS_CONTAINER_WRITABLE='maybe' must be 1 or 0"
  expect "rejected before allocation" no_job_named "$name"
}

test_unsupported_and_malformed_options() {
  local name=crisp-it-bad-options-$RANDOM
  local named_srun=("${SRUN[@]}" -J "$name")
  run as_user "${named_srun[@]}" --container-image="$TEST_IMAGE" --container-save=/tmp/ true
  expect_crisp_error "--container-save to a directory" "crisp: invalid --container-save '/tmp/': it must name a file"
  run as_user "${named_srun[@]}" --container-image="$TEST_IMAGE" --container-name='bad/name' true
  expect_crisp_error "bad name" "crisp: invalid --container-name 'bad/name'"
  run as_user "${named_srun[@]}" --container-image="$TEST_IMAGE" --container-name=x:sometimes true
  expect_crisp_error "bad mode" "unknown mode 'sometimes'"
  run as_user "${named_srun[@]}" --container-image="$TEST_IMAGE" --container-entrypoint-log true
  expect_crisp_error "log without entrypoint" "crisp: --container-entrypoint-log needs the entrypoint to run"
  run as_user "${named_srun[@]}" --container-image="$TEST_IMAGE" --container-mounts=tmpfs true
  expect_crisp_error "tmpfs without target" "a tmpfs needs a destination"
  run as_user "${named_srun[@]}" --container-mounts=/tmp:/tmp true
  expect "an option without an image is ignored with a message" contains "$ERR" \
    "crisp: --container-mounts is ignored without --container-image"
  expect "... and the step runs on the host" equals "$RC" 0
  expect "only the last srun was allocated" equals "$(jobs_named "$name" | wc -l)" 1
}

test_plugstack_arguments() {
  with_plugstack bogus=1
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" true
  expect "an unknown key fails the plugin's load" contains "$ERR" "crisp: unknown plugstack.conf argument 'bogus'"
  expect "... and srun" equals "$((RC != 0))" 1
  with_plugstack sbatch_support=0
  run as_user sbatch --container-image="$TEST_IMAGE" --wrap=true
  expect "sbatch_support=0: sbatch has no --container-image" contains "$ERR" "unrecognized option"
  with_plugstack mount_workdir=0
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" sh -c "ls $WORK 2>&1 || echo no-workdir"
  expect "mount_workdir=0: the job directory is not mounted" contains "$OUT" no-workdir
  restore_plugstack
}

test_sbatch_runs_the_script_inside() {
  cat >"$WORK/job.sh" <<JOB
#!/bin/sh
#SBATCH --container-image=$TEST_IMAGE
#SBATCH --output=$WORK/batch-%j.out
grep PRETTY /etc/os-release
echo "script=\$0"
echo x >> "\$0" 2>/dev/null && echo script-writable || echo script-read-only
pwd
JOB
  sbatch_wait "$WORK/job.sh" batch
  local job=$JOB log=$LOG
  expect "sbatch succeeds" equals "$RC" 0
  expect "the batch script runs in the image" contains "$log" "crisp test image (busybox)"
  expect "from slurmd's spooled copy" contains "$log" "script=/var/spool/slurmd/job"
  expect "which is read-only inside" contains "$log" script-read-only
  expect "in the submit directory" contains "$log" "$WORK"
  expect "nothing left after it" wait_until 20 no_cri_objects "$job"
}

test_salloc_steps_use_the_image() {
  run as_user timeout 120 salloc -Q --container-image="$TEST_IMAGE" srun grep PRETTY /etc/os-release
  expect "srun inside salloc --container-image runs in the image" contains "$OUT" "crisp test image (busybox)"
}

test_pytorch_variables() {
  run as_user "${SRUN[@]}" -n2 --container-image="$REGISTRY/crisp-test/pytorch-env:latest" \
    sh -c 'echo "$RANK $LOCAL_RANK $WORLD_SIZE $MASTER_ADDR $MASTER_PORT"'
  expect "RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR per task" equals "$(sort <<<"$OUT")" \
    "0 0 2 $(hostname -s) 29500"$'\n'"1 1 2 $(hostname -s) 29500"
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" sh -c 'echo "${RANK-unset}"'
  expect "not for other images" equals "$OUT" unset
}

test_pmix_directory_reaches_the_tasks() {
  run as_user "${SRUN[@]}" --mpi=pmix -n2 --container-image="$TEST_IMAGE" sh -c 'ls -d "$PMIX_SERVER_TMPDIR" >/dev/null && echo ok-$PMIX_RANK'
  expect "PMIX_SERVER_TMPDIR exists inside for every task" equals "$(sort <<<"$OUT")" $'ok-0\nok-1'
}

test_image_reference_forms() {
  run as_user "${SRUN[@]}" --container-image="127.0.0.1:5000#crisp-test/busybox" grep -c ^ID=crisp-busybox /etc/os-release
  expect "enroot form REGISTRY#IMAGE" equals "$OUT" 1
  run as_user "${SRUN[@]}" --container-image="docker://$TEST_IMAGE" grep -c ^ID=crisp-busybox /etc/os-release
  expect "docker:// prefix" equals "$OUT" 1
}

drop_private_image() {
  local on
  for on in "" in_node2; do $on ctr --address "$CONTAINERD_SOCK" -n k8s.io images rm "$PRIVATE_IMAGE" >/dev/null 2>&1; done
}
test_registry_credentials() {
  local home=/home/$TEST_USER
  rm -rf "$home/.config/enroot" "$home/.docker"
  drop_private_image
  run as_user "${SRUN[@]}" --container-image="$PRIVATE_IMAGE" true
  expect_crisp_error "no credentials" "the registry $AUTH_REGISTRY refused access to image $PRIVATE_IMAGE"
  as_user mkdir -p "$home/.config/enroot"
  echo "machine $AUTH_REGISTRY login $AUTH_USER password $AUTH_PASSWORD" | as_user tee "$home/.config/enroot/.credentials" >/dev/null
  run as_user "${SRUN[@]}" --container-image="$AUTH_USER@${AUTH_REGISTRY}#crisp-test/private" grep -o private /etc/os-release
  expect "enroot's netrc file and USER@ work" equals "$OUT" private
  rm -rf "$home/.config/enroot"
  drop_private_image
  as_user mkdir -p "$home/.docker"
  printf '{"auths": {"http://%s": {"auth": "%s"}}}' "$AUTH_REGISTRY" "$(printf '%s:%s' "$AUTH_USER" "$AUTH_PASSWORD" | base64)" |
    as_user tee "$home/.docker/config.json" >/dev/null
  run as_user "${SRUN[@]}" --container-image="$PRIVATE_IMAGE" grep -o private /etc/os-release
  expect "~/.docker/config.json works" equals "$OUT" private
  rm -rf "$home/.docker"
  drop_private_image
  printf '{"auths": {"%s": {"username": "%s", "password": "%s"}}}' "$AUTH_REGISTRY" "$AUTH_USER" "$AUTH_PASSWORD" \
    >/etc/crisp/registry-auth.json
  chmod 600 /etc/crisp/registry-auth.json
  CRISPD_ARGS="$CRISPD_ARGS --registry-auth /etc/crisp/registry-auth.json" start_crispd
  run as_user "${SRUN[@]}" --container-image="$PRIVATE_IMAGE" grep -o private /etc/os-release
  expect "the node's file serves a user without credentials" equals "$OUT" private
  start_crispd
  rm -f /etc/crisp/registry-auth.json
}
