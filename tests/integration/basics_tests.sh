# What every containerized step shows a user: the image, one container for its tasks, stdio and exit
# codes, the environment, mounts and the working directory. Sourced by run.sh (its helpers in lib.sh).

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

# Pyxis's propagation flags: the runtime takes them only of a shared or slave host mount, which
# a source on a node without systemd (this one) is not.
test_mount_propagation_flags() {
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" \
    --container-mounts=/var/tmp/crisp-it/ro:/ro-slave:ro+rslave,/var/tmp/crisp-it/rw:/rw-shared:rshared \
    sh -c 'grep -E " /(ro-slave|rw-shared) " /proc/self/mountinfo'
  expect "rslave: the container's mount is a slave" contains "$(grep ' /ro-slave ' <<<"$OUT")" " master:"
  expect "rshared: a shared one" contains "$(grep ' /rw-shared ' <<<"$OUT")" " shared:"
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
  expect_crisp_error "missing workdir" "/no/such/dir: No such file or directory"
}
