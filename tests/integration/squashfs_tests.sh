# Squashfs image files (Pyxis's --container-image=PATH), as the test user: the image
# dev/images/build.sh made as enroot's import lays one out, and each bad input.
# Sourced by run.sh.

SQSH_DIR=$STATE/sqsh
SQSH=$SQSH_DIR/debian.sqsh

# No loop device reads FILE any more (autoclear follows the container's end).
no_loop_for() { [[ -z $(losetup -j "$1") ]]; }

test_squashfs_image_runs_with_its_env_and_workdir() {
  run as_user "${SRUN[@]}" --container-image="$SQSH" \
    bash -c 'echo "$CRISP_IMAGE $(pwd) $(. /etc/os-release; echo $VERSION_CODENAME) $(stat -c %u /etc/os-release)"
             touch /newfile && echo writable'
  expect "the file's Debian runs, with its Env and WorkingDir, its files the user's" \
    equals "$OUT" "debian.sqsh /workspace bullseye $(id -u "$TEST_USER")"$'\nwritable'
  expect "... and no error" equals "$ERR" ""
  cp "$SQSH" "$WORK/rel.sqsh" && chmod 0644 "$WORK/rel.sqsh"  # root's, in the user's directory
  run as_user "${SRUN[@]}" --container-image=./rel.sqsh sh -c 'echo $CRISP_IMAGE'
  expect "a relative path starts at the job's directory" equals "$OUT" "debian.sqsh"
  run as_user "${SRUN[@]}" --container-image="$SQSH" --container-readonly touch /x
  expect "--container-readonly: the image cannot be written" contains "$ERR" "Read-only file system"
  run as_user "${SRUN[@]}" --container-image="$SQSH" --container-remap-root \
    --container-mounts=/var/tmp/crisp-it/ro:/data:ro sh -c 'id -u; stat -c %u /etc/os-release; cat /data/file'
  expect "remap-root and mounts work as with a registry image" equals "$OUT" $'0\n0\nread-only-data'
  run as_user "${SRUN[@]}" --container-image="$SQSH" --container-workdir=/tmp pwd
  expect "--container-workdir wins over the image's" equals "$OUT" "/tmp"
  expect "nothing reads the file once the steps are over" wait_until 10 no_loop_for "$SQSH"
}

# A file a user can have made or can change never reaches the kernel's squashfs: unsquashfs,
# with the user's ids, extracts it into the container's own snapshot.
test_squashfs_users_own_image_is_extracted_not_mounted() {
  cp "$SQSH" "$WORK/mine.sqsh" && chown "$TEST_USER:" "$WORK/mine.sqsh"
  run as_user "${SRUN[@]}" --container-image=./mine.sqsh \
    bash -c 'echo "$CRISP_IMAGE $(pwd) $(stat -c %u /etc/debian_version)"; touch /newfile && echo writable; losetup -a | wc -l'
  expect "the user's own file runs with its Env and WorkingDir, its files theirs" \
    equals "$OUT" "debian.sqsh /workspace $(id -u "$TEST_USER")"$'\nwritable\n0'
  expect "no loop device ever read it" no_loop_for "$WORK/mine.sqsh"
  local d=/var/tmp/crisp-it/sqsh-shared
  mkdir -p "$d" && cp "$SQSH" "$d/shared.sqsh" && chmod 0666 "$d/shared.sqsh"
  run as_user "${SRUN[@]}" --container-image="$d/shared.sqsh" sh -c 'echo $CRISP_IMAGE'
  expect "a root-owned file anyone may write is extracted too" equals "$OUT" "debian.sqsh"
  # A user's crafted image: a setuid-root copy of a shell, and a link out of the image.
  local src=$WORK/crafted
  rm -rf "$src" && mkdir -p "$src/bin" && cp /bin/busybox "$src/bin/" && chmod 4755 "$src/bin/busybox"
  ln -s /etc "$src/hostetc" && mkdir -p "$src/etc" && echo 'CRAFTED=1' >"$src/etc/environment"
  mksquashfs "$src" "$WORK/crafted.sqsh" -all-root -noappend -quiet >/dev/null && chown "$TEST_USER:" "$WORK/crafted.sqsh"
  run as_user "${SRUN[@]}" --container-image=./crafted.sqsh /bin/busybox sh -c \
    'echo "$CRAFTED $(/bin/busybox id -u)"; /bin/busybox touch /hostetc/crisp-crafted 2>&1 | /bin/busybox head -1'
  expect "the image's setuid-root file runs as the user" contains "$OUT" "1 $(id -u "$TEST_USER")"
  expect "... its link to /etc is the image's, not the node's to write" lacks "$(ls /etc)" "crisp-crafted"
}

test_squashfs_named_container_keeps_changes() {
  in_allocation "
    srun --container-image=$SQSH --container-name=sq sh -c 'echo kept >/kept'
    srun --container-name=sq cat /kept
    srun --container-image=$SQSH cat /kept
  "
  as_user "${CRISPCTL[@]}" rm sq >/dev/null 2>&1
  expect "the named container keeps what its first step wrote" contains "$OUT" "kept"
  expect "... an unnamed step of the file does not see it" contains "$ERR" "/kept: No such file or directory"
  expect "the named container's removal frees the file" wait_until 10 no_loop_for "$SQSH"
}

test_squashfs_on_two_nodes() {
  run as_user "${SRUN[@]}" -p multi -N2 --container-image="$SQSH" sh -c 'echo "$(hostname -s) $CRISP_IMAGE"'
  expect "both nodes run the one file" equals "$(sort <<<"$OUT" | cut -d' ' -f2 | uniq -c | awk '{print $1, $2}')" \
    "2 debian.sqsh"
}

test_squashfs_bad_files_get_one_line_and_leave_nothing() {
  local d=/var/tmp/crisp-it/sqsh-bad
  rm -rf "$d" && mkdir -p "$d/dir.sqsh" && chmod 0755 "$d"
  echo "not an image" >"$d/text.sqsh"
  head -c 200000 "$SQSH" >"$d/truncated.sqsh"
  cp "$SQSH" "$d/secret.sqsh" && chmod 0600 "$d/secret.sqsh"
  head -c 2000000 "$SQSH" >"$d/users-truncated.sqsh" && chown "$TEST_USER:" "$d/users-truncated.sqsh"
  chmod 0644 "$d"/{text,truncated}.sqsh
  local -A said=(
    [text]="it is not a squashfs image"
    [truncated]="it is truncated: the squashfs needs"
    [secret]="secret.sqsh: Permission denied"
    [dir]="is a directory, not a squashfs file"
    [missing]="missing.sqsh does not exist"
    [users-truncated]="it is truncated: the squashfs needs"
  )
  local name
  for name in "${!said[@]}"; do
    run as_user "${SRUN[@]}" --container-image="$d/$name.sqsh" true
    expect_crisp_error "$name.sqsh" "${said[$name]}"
  done
  run as_user "${SRUN[@]}" --container-image="$d/" true
  expect_crisp_error "a path ending in /" "it names a directory, not a squashfs file"
  expect "nothing of them is left mounted" equals "$(losetup -a | grep -c "$d")" 0
  expect "... nor on the node's mounts" lacks "$(cat /proc/self/mountinfo)" "squashfs"
}

test_squashfs_cancelled_step_frees_the_file() {
  local name=crisp-it-sqsh-$RANDOM
  as_user "${SRUN[@]}" -J "$name" --container-image="$SQSH" sleep 60 >/dev/null 2>&1 &
  local srun=$! job
  job=$(running_job "$name")
  expect "a running step reads the file through a loop device" wait_until 10 eval '! no_loop_for "$SQSH"'
  scancel "$job"
  wait "$srun" 2>/dev/null
  expect "scancel: the loop device is freed with the container" wait_until 20 no_loop_for "$SQSH"
  expect "... and the CRI holds nothing of the job" wait_until 10 no_cri_objects "$job"
}

# --container-save: import (an admin's file) - export - import - export: what each step
# wrote is in the next image, with the image's Env and WorkingDir; the files are the user's.
test_container_save_cycle() {
  rm -f "$WORK"/gen*.sqsh
  run as_user "${SRUN[@]}" -n2 --container-image="$SQSH" --container-save=./gen1.sqsh sh -c 'echo one >/first'
  expect "the first save is the user's file, in the job's directory" equals "$(stat -c %U "$WORK/gen1.sqsh" 2>&1)" "$TEST_USER"
  expect "... without /dev's contents" equals "$(unsquashfs -l "$WORK/gen1.sqsh" | grep -c '^squashfs-root/dev/.')" 0
  run as_user env PYXIS_CONTAINER_SAVE="$WORK/gen2.sqsh" "${SRUN[@]}" --container-image=./gen1.sqsh \
    sh -c 'cat /first; echo two >/second'
  expect "the second step ran from the first save" equals "$OUT" "one"
  echo stale >"$WORK/gen3.sqsh" && chown "$TEST_USER:" "$WORK/gen3.sqsh"
  run as_user "${SRUN[@]}" --container-image=./gen2.sqsh --container-save=./gen3.sqsh true
  run as_user "${SRUN[@]}" --container-image=./gen3.sqsh sh -c 'cat /first /second; echo "$CRISP_IMAGE $(pwd)"'
  expect "the third image holds both steps' files, the image's Env and WorkingDir; the old file replaced" \
    equals "$OUT" $'one\ntwo\ndebian.sqsh /workspace'
  expect "no temporary file is left beside them" equals "$(ls -A "$WORK" | grep -c '\.crisp-')" 0
}

test_container_save_errors_get_one_line() {
  run as_user "${SRUN[@]}" --container-image="$SQSH" --container-save=/etc/crisp-it.sqsh true
  expect "a directory the user cannot write: one line" contains "$ERR" "crisp: --container-save: cannot write /etc/crisp-it.sqsh: Permission denied"
  expect "... and nothing written" equals "$(ls /etc | grep -c crisp-it)" 0
  run as_user "${SRUN[@]}" --container-image="$SQSH" --container-save="$WORK/" true
  expect_crisp_error "a path ending in /" "it must name a file, not a directory"
  local full=/var/tmp/crisp-it/full
  mkdir -p "$full" && mount -t tmpfs -o size=2m tmpfs "$full" && chmod 1777 "$full"
  run as_user "${SRUN[@]}" --container-image="$SQSH" --container-save="$full/x.sqsh" true
  expect "a disk that fills: one line" contains "$ERR" "No space left on device"
  expect "... and nothing left there" equals "$(ls -A "$full")" ""
  umount "$full"
}

# crispctl import, as the test user: the registry image as a squashfs file of theirs, which
# runs with the registry image's Env and WorkingDir; then from a relative path of another node.
test_crispctl_import_runs_as_the_registry_image_does() {
  local image=$REGISTRY/crisp-test/pytorch-env:latest
  rm -f "$WORK/torch.sqsh"
  run as_user "${CRISPCTL[@]}" import "$image" torch.sqsh
  expect "crispctl import says what it wrote" contains "$OUT" "-> $WORK/torch.sqsh"
  expect "... a file of the user's" equals "$(stat -c %U "$WORK/torch.sqsh" 2>&1)" "$TEST_USER"
  expect "... without the holder's mount point" equals "$(unsquashfs -l "$WORK/torch.sqsh" | grep -c '\.crisp')" 0
  local probe='echo "$PYTORCH_VERSION $(pwd)"'
  run as_user "${SRUN[@]}" --container-image="$image" sh -c "$probe"
  local from_registry=$OUT
  run as_user "${SRUN[@]}" -p multi -w "$NODE2" --container-image=./torch.sqsh sh -c "$probe"
  expect "the file runs with the registry image's Env and WorkingDir (on the other node)" equals "$OUT" "$from_registry"
  expect "... which are there" contains "$from_registry" " /workspace"
  run as_user "${CRISPCTL[@]}" import "$REGISTRY/crisp-test/no-such-image:1" x.sqsh
  expect "a missing image: one line" contains "$ERR" "crisp: image $REGISTRY/crisp-test/no-such-image:1 was not found"
  expect "... and no file, nor a temporary one" equals "$(ls -A "$WORK" | grep -c 'x.sqsh')" 0
  run as_user "${CRISPCTL[@]}" import "$image" /etc/x.sqsh
  expect "a directory the user cannot write: one line" contains "$ERR" "cannot write /etc/x.sqsh: Permission denied"
  # An import reads a view of the image's layers (root_reads_tests.sh): none is left.
  expect "no view of the image is left" equals "$(import_views)" 0
}

# kill -9 of crispd mid-step leaves the step running and the file freed at its end; kill -9 of
# the step's slurmstepd leaves nothing once the job is cancelled (the holder exits, the sweep removes).
test_squashfs_survives_killed_daemons() {
  local name=crisp-it-sqkill-$RANDOM
  as_user "${SRUN[@]}" -J "$name" --container-image="$SQSH" sh -c 'sleep 5; cat /etc/debian_version >/dev/null && echo survived' \
    >/tmp/crisp-it.sq 2>&1 &
  local srun=$! job
  job=$(running_job "$name")
  kill -KILL "$(cat "$RUN/crispd.pid")"
  start_crispd
  wait "$srun"
  expect "a step outlives a crispd killed under it" contains "$(cat /tmp/crisp-it.sq)" "survived"
  expect "... and its end frees the file" wait_until 30 no_loop_for "$SQSH"
  as_user "${SRUN[@]}" -J "$name-2" --container-image="$SQSH" sleep 60 >/dev/null 2>&1 &
  srun=$!
  job=$(running_job "$name-2")
  wait_until 10 eval '! no_loop_for "$SQSH"'
  pkill -KILL -f "slurmstepd: \[$job\.0\]"
  scancel "$job"
  wait "$srun" 2>/dev/null
  expect "slurmstepd killed: the container goes" wait_until 90 no_cri_objects "$job"
  expect "... and the loop device with it" wait_until 30 no_loop_for "$SQSH"
}

# --container-entrypoint with a squashfs file: the entrypoint of its /etc/rc runs once per
# container, inside the file's root, as with the registry image it was imported from.
test_squashfs_entrypoint_runs_as_the_registry_images() {
  rm -f "$WORK/ep.sqsh" "$WORK/badep.sqsh"
  as_user "${CRISPCTL[@]}" import "$REGISTRY/crisp-test/entrypoint:latest" ep.sqsh >/dev/null
  as_user "${CRISPCTL[@]}" import "$REGISTRY/crisp-test/bad-entrypoint:latest" badep.sqsh >/dev/null
  run as_user "${SRUN[@]}" -n3 --container-image=./ep.sqsh --container-entrypoint \
    sh -c 'echo "$CRISP_FROM_ENTRYPOINT $(wc -l < /state/entrypoint-runs)"'
  expect "the file's entrypoint runs once per container, for three tasks" equals "$(sort -u <<<"$OUT")" "yes 1"
  run as_user "${SRUN[@]}" --container-image=./ep.sqsh sh -c 'echo "${CRISP_FROM_ENTRYPOINT-none}"'
  expect "... and not without --container-entrypoint" equals "$OUT" "none"
  run as_user "${SRUN[@]}" --container-image=./ep.sqsh --container-entrypoint --container-entrypoint-log true
  expect "--container-entrypoint-log shows its output" contains "$ERR" "entrypoint ran as uid $(id -u "$TEST_USER")"
  run as_user "${SRUN[@]}" --container-image=./badep.sqsh --container-entrypoint true
  expect_crisp_error "a failing entrypoint in a file" "exited before it ran the holder (it must end with exec"
  expect "its output explains why" contains "$ERR" "its output ends: setup failed"
  # Its /etc/rc runs as enroot runs it: /etc/rc.local sourced first (with Pyxis too, which
  # replaces rc.local only without the entrypoint).
  local src=$WORK/rclocal-image
  rm -rf "$src" && unsquashfs -q -d "$src" "$WORK/ep.sqsh" >/dev/null
  printf '%s\n' 'export CRISP_RC_LOCAL="sourced as $(id -u) in $PWD"' >>"$src/etc/rc.local"
  mksquashfs "$src" "$WORK/rclocal.sqsh" -all-root -noappend -quiet >/dev/null && chmod 0644 "$WORK/rclocal.sqsh"
  rm -rf "$src"
  run as_user "${SRUN[@]}" --container-image=./rclocal.sqsh --container-entrypoint \
    sh -c 'echo "$CRISP_RC_LOCAL|$CRISP_FROM_ENTRYPOINT"'
  expect "its /etc/rc.local is sourced as the user, then the entrypoint runs" equals "$OUT" \
    "sourced as $(id -u "$TEST_USER") in /|yes"
  run as_user "${SRUN[@]}" --container-image=./rclocal.sqsh sh -c 'echo "${CRISP_RC_LOCAL-none}"'
  expect "... and not without --container-entrypoint, as Pyxis" equals "$OUT" none
}

# An enroot image's /etc/fstab and /etc/environment (enroot's doc/image-format.md): the job's
# ${NAME} substituted, bind mounts resolved as the user's own, tmpfs lines, nofail; the image
# mounts nothing its user could not, and a line crisp cannot apply is one line.
test_squashfs_image_fstab_and_environment_take_the_jobs_values() {
  local src=$WORK/fstab-image
  rm -rf "$src" && mkdir -p "$src/bin" "$src/etc" && cp /bin/busybox "$src/bin/"
  printf '%s\n' 'DATA_DIR=${CRISP_DATA}/sub' 'SAY=hello ${CRISP_WHO}' >"$src/etc/environment"
  printf '%s\n' '# the image'"'"'s mounts' '${CRISP_DATA} /data none x-create=dir,bind,ro' \
    'tmpfs /scratch tmpfs x-create=dir,size=16m,mode=1777' '/nonexistent-crisp /never none bind,nofail' >"$src/etc/fstab"
  mksquashfs "$src" "$WORK/fstab.sqsh" -all-root -noappend -quiet >/dev/null && chmod 0644 "$WORK/fstab.sqsh"
  cp "$WORK/fstab.sqsh" "$WORK/fstab-mine.sqsh" && chown "$TEST_USER:" "$WORK/fstab-mine.sqsh"
  local image
  for image in fstab.sqsh fstab-mine.sqsh; do
    run as_user env CRISP_DATA=/var/tmp/crisp-it/ro CRISP_WHO=you "${SRUN[@]}" --container-image="./$image" /bin/busybox sh -c \
      'echo "$DATA_DIR|$SAY"; cat /data/file; /bin/busybox stat -f -c %T /scratch; ls /never 2>&1 | wc -l; touch /data/x 2>&1'
    expect "$image: its variables take the job's values" equals "$(sed -n 1p <<<"$OUT")" "/var/tmp/crisp-it/ro/sub|hello you"
    expect "$image: its bind mount of \${CRISP_DATA}, read-only as its line says" equals "$(sed -n 2p <<<"$OUT")" read-only-data
    expect "$image: its tmpfs" equals "$(sed -n 3p <<<"$OUT")" tmpfs
    expect "$image: ... and read-only" contains "$OUT" "Read-only file system"
  done
  printf '%s\n' '/var/tmp/crisp-it/secret/file /secret-file none bind' >"$src/etc/fstab"
  mksquashfs "$src" "$WORK/fstab-secret.sqsh" -all-root -noappend -quiet >/dev/null && chmod 0644 "$WORK/fstab-secret.sqsh"
  run as_user "${SRUN[@]}" --container-image=./fstab-secret.sqsh /bin/busybox cat /secret-file
  expect_crisp_error "an image naming what its user cannot reach" "/etc/fstab:1: mount source"
  expect "... gives nothing of it" lacks "$OUT" top-secret
  printf '%s\n' 'proc /p proc defaults' >"$src/etc/fstab"
  mksquashfs "$src" "$WORK/fstab-proc.sqsh" -all-root -noappend -quiet >/dev/null && chmod 0644 "$WORK/fstab-proc.sqsh"
  run as_user "${SRUN[@]}" --container-image=./fstab-proc.sqsh /bin/busybox true
  expect_crisp_error "a line crisp cannot apply" "/etc/fstab:1: file system type proc is not supported"
}
