# Integration tests of Pyxis's everyday behaviour (its bats suite's semantics):
# environment, working directory, mounts, option variables, interactive
# terminals and per-task GPUs, each as the test user sees it. Sourced by run.sh.

SNAPSHOTS=/var/lib/crisp/containerd/io.containerd.snapshotter.v1.overlayfs/snapshots

# With enroot the container's files are the user's: they write anywhere in their container.
test_rootfs_is_the_users() {
  local uid; uid=$(id -u "$TEST_USER")
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" \
    sh -c 'touch /newfile && mkdir /mymnt && echo edited >>/etc/os-release && stat -c "%u:%g" / /etc/os-release /newfile'
  expect "touch /newfile, mkdir /mymnt and editing /etc work as the plain user" equals "$RC" 0
  expect "... whose files they are" equals "$(sort -u <<<"$OUT")" "$uid:$(id -g "$TEST_USER")"
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" sh -c 'grep -c edited /etc/os-release; ls /newfile'
  expect "an unnamed container's changes go with its step" equals "$(head -1 <<<"$OUT")" 0
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" --container-remap-root \
    sh -c 'stat -c "%u" / /etc/passwd; echo "root:x:0:0:root:/root:/bin/sh" >/etc/passwd && echo rewrote'
  expect "under remap-root they are root's, and root edits them" equals "$OUT" $'0\n0\nrewrote'
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" --container-readonly touch /newfile
  expect "--container-readonly: Read-only file system" contains "$ERR" "Read-only file system"
}

# A setuid file the user makes in their root filesystem: inert inside, root's but
# unreachable on the host, absent from another user's container.
test_setuid_file_written_inside_grants_nothing() {
  local uid; uid=$(id -u "$TEST_USER")
  # A named container (global scope) outlives this step, for the next to run what it made.
  run as_user "${SRUN[@]}" --container-name=suid --container-image="$TEST_IMAGE" sh -c 'cp /suid/probe /mine && chmod 4755 /mine'
  run as_user "${SRUN[@]}" --container-name=suid sh -c '/mine; grep " / " /proc/self/mountinfo'
  expect "running it inside grants nothing" equals "$(head -1 <<<"$OUT")" "uid=$uid euid=$uid"
  expect "the root filesystem is nosuid" contains "$(tail -1 <<<"$OUT")" "nosuid"
  local host; host=$(ls -d "$SNAPSHOTS"/*/crisp-fs/mine 2>/dev/null | head -1)
  expect "on the host it lands root's, setuid" equals "$(stat -c '%a %u' "$host" 2>/dev/null)" "4755 0"
  expect "... where no user reaches it" equals "$(runuser -u "$TEST_USER" -- stat "$host" 2>&1 | grep -c 'Permission denied')" 1
  run "${SRUN[@]}" --container-image="$TEST_IMAGE" sh -c 'ls /mine 2>&1'
  expect "another user's container does not have it" contains "$OUT" "No such file"
  run runuser -u "$TEST_USER" -- "${CRISPCTL[@]}" rm suid
}

test_named_container_keeps_the_users_changes() {
  run as_user "${SRUN[@]}" --container-name=mine --container-image="$TEST_IMAGE" sh -c 'echo v1 >/etc/installed-by-me'
  settle
  run as_user "${SRUN[@]}" --container-name=mine cat /etc/installed-by-me
  expect "the user's next job finds what the last one put in the named container" equals "$OUT" v1
  run runuser -u "$TEST_USER" -- "${CRISPCTL[@]}" rm mine
  expect "crispctl rm removes it" equals "$RC" 0
}

# As enroot's standard hooks make it: the user has a name, a home and the node's timezone inside.
test_the_user_exists_inside() {
  local uid gid; uid=$(id -u "$TEST_USER"); gid=$(id -g "$TEST_USER")
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" \
    sh -c 'id -un; whoami; grep "^$(id -un):" /etc/passwd; grep -c "^root:" /etc/passwd; md5sum </etc/localtime'
  expect "id -un and whoami name the user" equals "$(head -2 <<<"$OUT")" "$TEST_USER"$'\n'"$TEST_USER"
  expect "their passwd entry is the node's" equals "$(sed -n 3p <<<"$OUT")" \
    "$TEST_USER:x:$uid:$gid::/home/$TEST_USER:/bin/sh"
  expect "... root's is there once" equals "$(sed -n 4p <<<"$OUT")" 1
  expect "the node's timezone" equals "$(sed -n 5p <<<"$OUT")" "$(md5sum </etc/localtime)"
  # From /tmp: the job's directory is then not under the home, which is made from /etc/skel.
  run bash -c "cd /tmp && runuser -u $TEST_USER -- ${SRUN[*]} --container-image=$DEBIAN_IMAGE \
    sh -c 'ls -A \$HOME | tr \"\\n\" \" \"; echo; grep -c ^_apt: /etc/passwd; cat /etc/apt/apt.conf.d/99crisp-sandbox'"
  expect "a home from the image's /etc/skel" equals "$(head -1 <<<"$OUT")" ".bash_logout .bashrc .profile "
  expect "_apt is gone" equals "$(sed -n 2p <<<"$OUT")" 0
  expect "apt is told to stay root" equals "$(sed -n 3p <<<"$OUT")" 'APT::Sandbox::User "root";'
  expect "the image's own layers never name the user" equals \
    "$(grep -l "^$TEST_USER:" "$SNAPSHOTS"/*/fs/etc/passwd 2>/dev/null | wc -l)" 0
}

APT_PORT=5005

# serve_apt_repository: a one-package apt repository (crisp-hello) on loopback,
# made with dpkg-deb and dpkg-scanpackages, served until stop_apt_repository.
serve_apt_repository() {
  local repo=/var/tmp/crisp-it/apt
  rm -rf "$repo" && mkdir -p "$repo/pkg/DEBIAN" "$repo/pkg/usr/bin"
  printf '#!/bin/sh\necho hello from the loopback repository\n' >"$repo/pkg/usr/bin/crisp-hello"
  chmod 755 "$repo/pkg/usr/bin/crisp-hello"
  printf 'Package: crisp-hello\nVersion: 1.0\nArchitecture: all\nMaintainer: crisp tests <crisp@localhost>\nDescription: crisp test package\n' \
    >"$repo/pkg/DEBIAN/control"
  dpkg-deb --root-owner-group -b "$repo/pkg" "$repo/crisp-hello_1.0_all.deb" >/dev/null
  (cd "$repo" && dpkg-scanpackages . /dev/null >Packages 2>/dev/null) && rm -rf "$repo/pkg"
  python3 -m http.server --bind 127.0.0.1 "$APT_PORT" --directory "$repo" >/dev/null 2>&1 &
  APT_SERVER=$!
  wait_until 10 curl -sf "http://127.0.0.1:$APT_PORT/Packages" -o /dev/null
}
stop_apt_repository() { kill "$APT_SERVER" 2>/dev/null; wait "$APT_SERVER" 2>/dev/null; }

# The everyday Pyxis workflow: root in a Debian image installs a package, the
# named container keeps it for the job's next step and the user's next job.
test_apt_under_remap_root_from_a_loopback_repository() {
  serve_apt_repository
  local node; node=$(hostname -s)
  local install="echo 'deb [trusted=yes] http://127.0.0.1:$APT_PORT ./' >/etc/apt/sources.list &&
    apt-get update && apt-get install -y --no-install-recommends crisp-hello"
  in_allocation "
    srun -w $node --container-image=$DEBIAN_IMAGE --container-remap-root --container-name=apt bash -c \"$install\" >/dev/null
    echo install=\$?
    echo next-step=\$(srun -w $node --container-name=apt crisp-hello)"
  expect "apt-get update && apt-get install as root in the image" contains "$OUT" "install=0"
  expect "the job's next step finds the package" contains "$OUT" "next-step=hello from the loopback repository"
  expect "apt warns of nothing it could not do" lacks "$ERR" "W: "
  expect "... nor fails to log (it opens a pty)" lacks "$ERR" "E: "
  run as_user "${SRUN[@]}" -w "$node" --container-name=apt crisp-hello
  expect "... and the user's next job too (global scope)" equals "$OUT" "hello from the loopback repository"
  run as_user "${SRUN[@]}" -w "$node" --container-image="$DEBIAN_IMAGE" sh -c 'command -v crisp-hello || echo absent'
  expect "the image itself is unchanged" equals "$OUT" absent
  run as_user "${SRUN[@]}" -w "$node" --container-image="$DEBIAN_IMAGE" sh -c 'grep Seccomp: /proc/self/status; chown 0 /etc/hostname; echo chown=$?'
  expect "enroot's filter: chown answers 0" contains "$OUT" "chown=0"
  expect "... Seccomp: 2, as with Pyxis" contains "$OUT" $'Seccomp:\t2'
  run runuser -u "$TEST_USER" -- "${CRISPCTL[@]}" rm apt
  stop_apt_repository
}

test_locale_home_and_entrypoint_variables() {
  run as_user env LANG=en_US.UTF-8 LC_ALL=en_US.UTF-8 LANGUAGE=en "${SRUN[@]}" --container-image="$TEST_IMAGE" \
    sh -c 'echo "${LANG-unset}|${LC_ALL-unset}|${LANGUAGE-unset}"'
  expect "the host's locale stays out (LANG is the image's own)" equals "$OUT" "C.UTF-8|unset|unset"
  run as_user env LC_ALL=en_US.UTF-8 "${SRUN[@]}" --container-image="$TEST_IMAGE" --container-env=LC_ALL sh -c 'echo $LC_ALL'
  expect "... unless named in --container-env" equals "$OUT" en_US.UTF-8
  echo home-marker >"/home/$TEST_USER/crisp-home-marker" && chown "$TEST_USER:" "/home/$TEST_USER/crisp-home-marker"
  run as_user env HOME="/home/$TEST_USER" "${SRUN[@]}" --container-image="$TEST_IMAGE" --container-remap-root \
    --container-mount-home sh -c 'echo $HOME; cat /root/crisp-home-marker'
  expect "under remap-root HOME is /root, and the home is mounted there" equals "$OUT" $'/root\nhome-marker'
  local img=$REGISTRY/crisp-test/entrypoint:latest
  run as_user env CRISP_PASSED=hi "${SRUN[@]}" --container-image="$img" --container-entrypoint sh -c 'echo $CRISP_ENTRYPOINT_SAW'
  expect "the entrypoint does not see the job's variables" equals "$OUT" unset
  run as_user env CRISP_PASSED=hi "${SRUN[@]}" --container-image="$img" --container-entrypoint --container-env=CRISP_PASSED \
    sh -c 'echo $CRISP_ENTRYPOINT_SAW'
  expect "... except those named in --container-env" equals "$OUT" hi
}

test_workdir_as_pyxis() {
  run as_user "${SRUN[@]}" --container-image="$REGISTRY/crisp-test/pytorch-env:latest" sh -c 'pwd; echo $PWD'
  expect "the image's WorkingDir is the default" equals "$OUT" $'/workspace\n/workspace'
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" --container-workdir=usr/bin pwd
  expect "a relative --container-workdir starts at the container's root" equals "$OUT" /usr/bin
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" --container-workdir=../ pwd
  expect "../ from / is /" equals "$OUT" /
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" --container-workdir=/no/such/dir pwd
  expect_crisp_error "missing workdir" "/no/such/dir: No such file or directory"
}

test_mounts_as_pyxis() {
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" --container-mounts=/var/tmp/crisp-it/no/such/foo:/mnt true
  expect_crisp_error "missing source" "source path does not exist: /var/tmp/crisp-it/no/such/foo"
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" --container-mounts=/etc/shadow:/shadow \
    sh -c 'grep -c " /shadow " /proc/self/mountinfo; cat /shadow'
  expect "/etc/shadow, which the user reaches, is mounted" equals "$OUT" 1
  expect "... and stays unreadable" contains "$ERR" "Permission denied"
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" --container-mounts=/var/tmp/crisp-it/rw:/mnt:unbindable+ro \
    sh -c 'grep " /mnt " /proc/self/mountinfo; touch /mnt/foo'
  expect "unbindable+ro: unbindable" contains "$OUT" "unbindable"
  expect "... and read-only" contains "$ERR" "Read-only file system"
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" \
    --container-mounts=tmpfs:/mytmpfs:huge=within_size+size=64m+mode=1777+nr_inodes=1000 \
    sh -c 'grep " /mytmpfs " /proc/self/mountinfo; stat -c %a /mytmpfs'
  expect "tmpfs options: huge" contains "$OUT" "huge=within_size"
  expect "... size" contains "$OUT" "size=65536k"
  expect "... nr_inodes" contains "$OUT" "nr_inodes=1000"
  expect "... mode" equals "$(tail -1 <<<"$OUT")" 1777
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" --container-mounts=tmpfs:/t:uid=0 true
  expect_crisp_error "a tmpfs option crisp does not take" "unknown flag 'uid=0'"
}

test_option_variables_yield_to_the_command_line() {
  run as_user env PYXIS_CONTAINER_WRITABLE=0 "${SRUN[@]}" --container-image="$TEST_IMAGE" touch /tmp/newfile
  expect "PYXIS_CONTAINER_WRITABLE=0: read-only" contains "$ERR" "Read-only file system"
  run as_user env PYXIS_CONTAINER_WRITABLE=1 "${SRUN[@]}" --container-image="$TEST_IMAGE" touch /tmp/newfile
  expect "PYXIS_CONTAINER_WRITABLE=1: writable" equals "$RC" 0
  run as_user env PYXIS_CONTAINER_WRITABLE=1 "${SRUN[@]}" --container-image="$TEST_IMAGE" --container-readonly touch /tmp/newfile
  expect "--container-readonly wins over PYXIS_CONTAINER_WRITABLE=1, no conflict" contains "$ERR" "Read-only file system"
  expect "... no conflict reported" lacks "$ERR" "conflict"
  run as_user env PYXIS_CONTAINER_READONLY=0 "${SRUN[@]}" --container-image="$TEST_IMAGE" --container-readonly touch /tmp/newfile
  expect "--container-readonly wins over PYXIS_CONTAINER_READONLY=0" contains "$ERR" "Read-only file system"
  run as_user env PYXIS_CONTAINER_READONLY=1 "${SRUN[@]}" --container-image="$TEST_IMAGE" --container-writable touch /tmp/newfile
  expect "--container-writable wins over PYXIS_CONTAINER_READONLY=1" equals "$RC" 0
}

# srun --pty through a real terminal: a new pty of a known size, keys typed one line at a time.
test_interactive_terminal() {
  run as_user /usr/bin/python3 "$CRISP_SRC/tests/integration/pty_session.py" 30 100 -- \
    "${SRUN[@]}" --pty --container-image="$TEST_IMAGE" sh -i <<'KEYS'
tty
stty size
@resize 40 120
stty size
printf 'line-one\nline-two\n' >/tmp/crisp-less; less /tmp/crisp-less
q
sleep 30
@ctrl-c
echo "after-ctrl-c rc=$?"
exit
KEYS
  expect "tty names the step's terminal" contains "$OUT" $'\n/dev/pts/'
  expect "... which is a terminal inside" lacks "$OUT" "not a tty"
  expect "stty size reports the window" contains "$OUT" $'\n30 100'
  expect "... and follows a resize" contains "$OUT" $'\n40 120'
  expect "less shows the file and quits on q" contains "$OUT" "line-two"
  expect "Ctrl-C stops the foreground job, the shell goes on" contains "$OUT" "after-ctrl-c rc=130"
  expect "the step ends with the shell" equals "$RC" 0
  run as_user "${SRUN[@]}" --container-image="$DEBIAN_IMAGE" script -qc tty /dev/null
  expect "a program inside opens a pty of its own (script, tmux, apt's log)" contains "$OUT" "/dev/pts/"
}

# Slurm 22.05 under ConstrainDevices gives every task of --gpus-per-task=1 the
# variable "0" (numbered among the task's own GPUs); inside, the container holds
# all the step's, so each task must name its own among them.
test_gpus_bound_per_task() {
  run as_user "${SRUN[@]}" -N1 -n2 --gpus-per-task=1 --container-image="$TEST_IMAGE" \
    sh -c 'echo "$SLURM_PROCID:$CUDA_VISIBLE_DEVICES:$GPU_DEVICE_ORDINAL"; ls /dev | grep -c "^nvidia[0-9]"'
  expect "--gpus-per-task=1: each task its own of the container's two GPUs" equals \
    "$(grep : <<<"$OUT" | sort)" $'0:0:0\n1:1:1'
  expect "... and the container holds both" equals "$(grep -v : <<<"$OUT" | sort -u)" 2
  run as_user "${SRUN[@]}" -N1 -n2 --gres=gpu:2 --gpu-bind=map_gpu:1,0 --container-image="$TEST_IMAGE" \
    sh -c 'echo "$SLURM_PROCID:$CUDA_VISIBLE_DEVICES"'
  expect "--gpu-bind=map_gpu:1,0 swaps them" equals "$(sort <<<"$OUT")" $'0:1\n1:0'
  run as_user "${SRUN[@]}" -N1 -n2 --gres=gpu:2 --container-image="$TEST_IMAGE" sh -c 'echo "$CUDA_VISIBLE_DEVICES"'
  expect "unbound tasks share the step's" equals "$(sort -u <<<"$OUT")" "0,1"
}
