# Integration tests of the site's container configuration (agent/site/): the mounts and
# variables an admin gives every container, in crisp's files (--site-config) and in
# enroot's (--enroot-config), as the test user sees them. crispd reads the files for each
# container: the tests write them and take them away. Sourced by run.sh.

SITE_DATA=/var/tmp/crisp-site
site_reset() {
  rm -rf "$SITE_CONFIG_DIR" "$ENROOT_CONFIG_DIR" "$SITE_DATA" /tmp/crisp-site-shared
  mkdir -p "$SITE_CONFIG_DIR" "$ENROOT_CONFIG_DIR" "$SITE_DATA/tools" && chmod 0755 "$SITE_DATA"
  echo site-tool >"$SITE_DATA/tools/version"
}
# site_file PATH LINE...: one of the admin's files (root's, 0644), a line an argument.
site_file() { mkdir -p "$(dirname "$1")" && printf '%s\n' "${@:2}" >"$1" && chmod 0644 "$1"; }
matches() { [[ $1 =~ $2 ]]; }
crispd_log_since() { tail -n +"$(($1 + 1))" "$LOGS/crispd.log"; }

test_site_mount_and_variable_reach_every_container() {
  site_reset
  site_file "$SITE_CONFIG_DIR/mounts.d/10-tools.fstab" "# site tools" "$SITE_DATA/tools /opt/site-tools none x-create=dir,bind,nosuid"
  site_file "$SITE_CONFIG_DIR/environ.d/10-fabric.env" "UCX_TLS=rc,sm" 'SITE_JOB="job-${SLURM_JOB_ID}"'
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" \
    sh -c 'cat /opt/site-tools/version; echo "$UCX_TLS $SITE_JOB"; touch /opt/site-tools/x 2>&1'
  expect "the site's mount is in the container" equals "$(sed -n 1p <<<"$OUT")" site-tool
  expect "its variables, \${SLURM_JOB_ID} the job's" matches "$(sed -n 2p <<<"$OUT")" '^rc,sm job-[0-9]+$'
  expect "read-only, crisp's default" contains "$OUT" "Read-only file system"
  run as_user "${SRUN[@]}" -p multi -N2 --container-image="$TEST_IMAGE" sh -c 'cat /opt/site-tools/version; echo $UCX_TLS'
  expect "on both nodes" equals "$(sort <<<"$OUT" | uniq -c | awk '{print $1 $2}' | tr '\n' ' ')" "2rc,sm 2site-tool "
  run as_user "${SRUN[@]}" --container-name=site-join --container-image="$TEST_IMAGE" true
  settle
  run as_user "${SRUN[@]}" --container-name=site-join sh -c 'echo $UCX_TLS'
  expect "a step that joins a named container gets the variables too" equals "$OUT" rc,sm
  run runuser -u "$TEST_USER" -- "${CRISPCTL[@]}" rm site-join
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" --container-mounts=umount:/opt/site-tools \
    sh -c 'ls /opt/site-tools | wc -l; echo $UCX_TLS'
  expect "a user's umount:DST leaves a site mount out of their container, as with Pyxis" equals "$OUT" $'0\nrc,sm'
  site_reset
}

test_partition_config_reaches_its_partitions_jobs_alone() {
  site_reset
  site_file "$SITE_CONFIG_DIR/partitions/multi/environ.d/10.env" "PARTITION_VAR=multi-only"
  site_file "$SITE_CONFIG_DIR/partitions/multi/mounts.d/10.fstab" "$SITE_DATA/tools /opt/multi none bind"
  run as_user "${SRUN[@]}" -p multi --container-image="$TEST_IMAGE" sh -c 'echo "[$PARTITION_VAR]"; cat /opt/multi/version'
  expect "a job of the partition gets its variable and mount" equals "$OUT" $'[multi-only]\nsite-tool'
  run as_user env SLURM_JOB_PARTITION=multi "${SRUN[@]}" -p debug --container-image="$TEST_IMAGE" \
    sh -c 'echo "[$PARTITION_VAR]"; ls /opt/multi 2>&1'
  expect "another partition's job does not, whatever its environment says" equals "$(head -1 <<<"$OUT")" "[]"
  expect "... nor its mount" contains "$OUT" "No such file"
  site_reset
}

# A user must not steer what the admin mounts into everyone's containers.
test_users_cannot_steer_a_site_mount() {
  site_reset
  mkdir -p "$SITE_DATA/private" && chmod 0700 "$SITE_DATA/private" && echo root-only >"$SITE_DATA/private/file"
  # The admin names a directory in /tmp that does not exist yet; the user makes it first.
  as_user sh -c 'mkdir /tmp/crisp-site-shared && echo planted >/tmp/crisp-site-shared/tool'
  site_file "$SITE_CONFIG_DIR/mounts.d/10.fstab" "/tmp/crisp-site-shared /opt/shared none bind" \
    "$SITE_DATA/\${SITE_WHO} /opt/who none bind"
  local log0; log0=$(wc -l <"$LOGS/crispd.log")
  run "${SRUN[@]}" --container-image="$TEST_IMAGE" sh -c 'cat /opt/shared/tool 2>&1'
  expect "another user's (root's) job does not get the directory the user planted" lacks "$OUT" planted
  expect "crispd says why it left it out" grep -q "/tmp/crisp-site-shared left out: .*belongs to uid $(id -u "$TEST_USER")" \
    <(crispd_log_since "$log0")
  run as_user env SITE_WHO=../../../etc "${SRUN[@]}" --container-image="$TEST_IMAGE" sh -c 'ls /opt/who/shadow 2>&1'
  expect "a variable cannot lead a site mount out of its directory" contains "$OUT" "No such file"
  run as_user env SITE_WHO=private "${SRUN[@]}" --container-image="$TEST_IMAGE" sh -c 'cat /opt/who/file 2>&1'
  expect "a source with the user's variables is reached with the user's rights" lacks "$OUT" root-only
  run as_user sh -c "echo '/etc /mine none bind' >$SITE_CONFIG_DIR/mounts.d/20-mine.fstab"
  expect "the user cannot add a site mount" contains "$ERR" "Permission denied"
  site_reset
}

test_missing_site_source_fails_the_step_with_one_line() {
  site_reset
  site_file "$SITE_CONFIG_DIR/mounts.d/10.fstab" "$SITE_DATA/absent /opt/absent none bind"
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" true
  expect_crisp_error "a site source missing on the node" "$SITE_DATA/absent"
  expect "... telling whom to ask" contains "$ERR" "does not exist on this node: tell your admin"
  site_file "$SITE_CONFIG_DIR/mounts.d/10.fstab" "$SITE_DATA/absent /opt/absent none bind,nofail"
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" echo ran
  expect "with nofail the step runs without it" equals "$OUT" ran
  site_reset
}

# An enroot site's files, as enroot reads them: mounts read-write unless ro, ${NAME} from the
# job's environment, envfmt's rules; crisp's own files win where both set a variable.
test_enroot_configuration_directory_gives_what_enroot_would() {
  site_reset
  mkdir -p "$SITE_DATA/scratch" && chmod 1777 "$SITE_DATA/scratch"
  site_file "$ENROOT_CONFIG_DIR/mounts.d/10-scratch.fstab" "$SITE_DATA/scratch /scratch none x-create=dir,bind,rslave"
  site_file "$ENROOT_CONFIG_DIR/mounts.d/20-tools.fstab" "$SITE_DATA/tools /opt/tools none x-create=dir,bind,ro"
  site_file "$ENROOT_CONFIG_DIR/environ.d/10-cache.env" "# enroot's form" 'XDG_CACHE_HOME=${HOME}/.cache' \
    "  ENROOT_SQUASH_OPTIONS=-comp lz4" 'QUOTED="a b"' "SHARED=enroot"
  site_file "$SITE_CONFIG_DIR/environ.d/10.env" "SHARED=crisp"
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" \
    sh -c 'echo w >/scratch/mine && cat /scratch/mine; touch /opt/tools/x 2>&1; echo "$XDG_CACHE_HOME|${ENROOT_SQUASH_OPTIONS-unset}|$QUOTED|$SHARED"'
  expect "enroot's mount is read-write by default" equals "$(head -1 <<<"$OUT")" w
  expect "... and read-only with ro" contains "$OUT" "Read-only file system"
  expect "its variables as enroot gives them; crisp's file wins" equals "$(tail -1 <<<"$OUT")" \
    "/home/$TEST_USER/.cache|unset|a b|crisp"
  site_reset
}

# site_hook PATH BODY: one of the admin's hooks (root's, 0755; mode in $3).
site_hook() { mkdir -p "$(dirname "$1")" && printf '#!/bin/sh\n%s\n' "$2" >"$1" && chmod "${3:-0755}" "$1"; }

# The admin's hooks run for each step in its started container: hooks.d as the user, with
# enroot's variables and the job's environment, in the container's cgroups; root-hooks.d as
# root; what they append to
# ENROOT_ENVIRON is in the step's environment; a joined named container's step runs them too.
test_site_hooks_run_as_the_user_with_enroots_variables() {
  site_reset
  site_hook "$SITE_CONFIG_DIR/hooks.d/10-who" \
    'echo "HOOK_WHO=$(id -un) $SITE_ASKED" >>"$ENROOT_ENVIRON"
test -r "$ENROOT_ROOTFS/etc/passwd" && echo "HOOK_HOLDER=$SLURM_JOB_ID:$ENROOT_PID" >>"$ENROOT_ENVIRON"
[ "$(cat /proc/self/cgroup)" = "$(cat "/proc/$ENROOT_PID/cgroup")" ] && echo "HOOK_CGROUPS=the-containers" >>"$ENROOT_ENVIRON"'
  site_hook "$SITE_CONFIG_DIR/root-hooks.d/10-root" 'echo "ROOT_HOOK=$(id -u) [${SITE_ASKED-}]" >>"$ENROOT_ENVIRON"' 0700
  site_file "$SITE_CONFIG_DIR/environ.d/10.env" "HOOK_WHO=from-the-file"
  run as_user env SITE_ASKED=yes "${SRUN[@]}" --container-image="$TEST_IMAGE" \
    sh -c 'echo "$HOOK_WHO|$ROOT_HOOK|$HOOK_CGROUPS"; echo "$HOOK_HOLDER"'
  expect "the user's hook ran as the user with the job's environment, after the site's files" \
    equals "$(head -1 <<<"$OUT")" "$TEST_USER yes|0 []|the-containers"
  expect "ENROOT_ROOTFS is the step's container's root, reachable by the user's hook" matches "$(tail -1 <<<"$OUT")" '^[0-9]+:[0-9]+$'
  run as_user "${SRUN[@]}" --container-name=site-hook-join --container-image="$TEST_IMAGE" true
  settle
  run as_user env SITE_ASKED=again "${SRUN[@]}" --container-name=site-hook-join sh -c 'echo "$HOOK_WHO"'
  expect "a step that joins a named container runs them too" equals "$OUT" "$TEST_USER again"
  run runuser -u "$TEST_USER" -- "${CRISPCTL[@]}" rm site-hook-join
  site_reset
}

# A hook that fails or hangs fails its step with one line and leaves nothing: no container,
# no process it started (each hook is the first process of a PID namespace of its own).
test_failing_and_hanging_hooks_fail_the_step_and_leave_nothing() {
  site_reset
  site_hook "$SITE_CONFIG_DIR/hooks.d/10-license" 'echo checking >&2; echo "license server down" >&2; exit 3'
  run as_user "${SRUN[@]}" -J site-hook-fail --container-image="$TEST_IMAGE" echo ran
  expect_crisp_error "a failing hook" "hooks.d/10-license failed (exit status 3): license server down"
  expect "the step did not run" lacks "$OUT" ran
  expect "no container of the job is left" wait_until 20 no_cri_objects "$(last_job_named site-hook-fail)"
  CRISPD_ARGS="$CRISPD_ARGS --hook-timeout 3" start_crispd
  site_hook "$SITE_CONFIG_DIR/hooks.d/10-license" 'setsid sleep 4242.5 </dev/null >/dev/null 2>&1 &
exec sleep 1000'
  run as_user "${SRUN[@]}" -J site-hook-hang --container-image="$TEST_IMAGE" echo ran
  expect_crisp_error "a hanging hook" "hooks.d/10-license did not finish within its time: tell your admin"
  expect "no container of the job is left" wait_until 20 no_cri_objects "$(last_job_named site-hook-hang)"
  expect "nothing the hook started runs on" wait_until 5 no_process 'sleep 4242.5'
  start_crispd
  site_reset
}
no_process() { ! pgrep -f "[${1:0:1}]${1:1}" >/dev/null; }

# A user can neither add a hook nor make one run as root, nor have a file of theirs run.
test_users_cannot_add_a_site_hook_or_run_one_as_root() {
  site_reset
  mkdir -p "$SITE_CONFIG_DIR/hooks.d" "$SITE_CONFIG_DIR/root-hooks.d"
  run as_user sh -c "printf '#!/bin/sh\nid -u >/tmp/crisp-site-owned\n' >$SITE_CONFIG_DIR/root-hooks.d/10-mine"
  expect "the user cannot write root-hooks.d" contains "$ERR" "Permission denied"
  site_hook "$SITE_CONFIG_DIR/root-hooks.d/20-theirs" 'echo "THEIRS=$(id -u)" >>"$ENROOT_ENVIRON"'
  chown "$TEST_USER" "$SITE_CONFIG_DIR/root-hooks.d/20-theirs"
  site_hook "$SITE_CONFIG_DIR/hooks.d/10-env" 'echo "HOOK_PATH=$(id -u)" >>"$ENROOT_ENVIRON"'
  local log0; log0=$(wc -l <"$LOGS/crispd.log")
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" sh -c 'echo "[${THEIRS-}] $HOOK_PATH"'
  expect "a hook file the user owns does not run; the admin's runs with the user's ids" \
    equals "$OUT" "[] $(id -u "$TEST_USER")"
  expect "crispd says why it skipped the user's file" grep -q "root-hooks.d/20-theirs: skipped: not a regular file that root owns" \
    <(crispd_log_since "$log0")
  site_reset
}

# An enroot site's hooks.d: its own *.sh run as enroot runs them (ENROOT_ENVIRON honoured,
# ENROOT_MOUNTS lines logged as not applied); enroot's standard hooks are crisp's work and
# not run; crispd says at start what it does instead of each enroot.conf setting and hook.
test_enroot_hooks_run_but_its_standard_ones() {
  site_reset
  site_hook "$ENROOT_CONFIG_DIR/hooks.d/10-devices.sh" 'exit 1'
  site_hook "$ENROOT_CONFIG_DIR/hooks.d/50-site.sh" 'echo "SITE_HOOK=enroot-form" >>"$ENROOT_ENVIRON"
echo "/var/tmp /mnt/hooked none bind" >>"$ENROOT_MOUNTS"'
  site_file "$ENROOT_CONFIG_DIR/enroot.conf" "#ENROOT_LIBRARY_PATH /usr/lib/enroot" "ENROOT_ALLOW_HTTP yes"
  local log0; log0=$(wc -l <"$LOGS/crispd.log")
  start_crispd
  expect "crispd says what of enroot.conf it does instead" grep -q "enroot.conf: ENROOT_ALLOW_HTTP yes: a plain-HTTP registry" \
    <(crispd_log_since "$log0")
  expect "... and which standard hook it does not run" grep -q "hooks.d/10-devices.sh: not run: crisp does this standard hook's work" \
    <(crispd_log_since "$log0")
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" sh -c 'echo "$SITE_HOOK"'
  expect "the site's enroot hook ran; enroot's standard one did not" equals "$OUT" enroot-form
  expect "its mount lines are logged as not applied" grep -q "50-site.sh: its ENROOT_MOUNTS lines are not applied" \
    <(crispd_log_since "$log0")
  site_reset
}

# slurm_client_image: a squashfs image carrying this node's Slurm client (srun, libslurm and
# Slurm's plugins, their libraries) over busybox, as a site's image with Slurm in it would.
SLURM_CLIENT_SQSH=$STATE/slurm-client.sqsh
slurm_client_image() {
  [[ -s $SLURM_CLIENT_SQSH && $SLURM_CLIENT_SQSH -nt /usr/bin/srun ]] && return 0
  local root; root=$(mktemp -d)
  mkdir -p "$root/bin" "$root/etc" "$root/tmp" && chmod 1777 "$root/tmp" && cp /bin/busybox "$root/bin/"
  for tool in sh cat hostname env id; do ln -s busybox "$root/bin/$tool"; done
  local plugins=/usr/lib/x86_64-linux-gnu/slurm-wlm f
  { echo /usr/bin/srun; echo /usr/bin/scontrol; find "$plugins" -name '*.so'; } | while read -r f; do
    echo "$f"; ldd "$f" 2>/dev/null | grep -o '/[^ ]*'
  done | sort -u | while read -r f; do
    mkdir -p "$root$(dirname "$f")" && cp -L "$f" "$root$f"
  done
  mksquashfs "$root" "$SLURM_CLIENT_SQSH" -all-root -noappend -quiet >/dev/null && chmod 0644 "$SLURM_CLIENT_SQSH"
  rm -rf "$root"
}

# srun inside a containerized batch script (Pyxis #31): with the site's mounts of Slurm's
# configuration and munge's socket and an image that carries Slurm's client, the script's
# srun starts a step, which runs in the image too (the script's --container-image is its
# steps' as well).
test_srun_inside_a_containerized_batch_script() {
  site_reset
  slurm_client_image
  site_file "$SITE_CONFIG_DIR/mounts.d/10-slurm.fstab" "/etc/slurm /etc/slurm none x-create=dir,bind,ro" \
    "/run/munge /run/munge none x-create=dir,bind"
  cat >"$WORK/inner.sh" <<JOB
#!/bin/sh
#SBATCH --container-image=$SLURM_CLIENT_SQSH
#SBATCH --output=$WORK/inner-%j.out
#SBATCH -N1 -n2
srun -n2 sh -c 'echo "step \$SLURM_STEP_ID task \$SLURM_PROCID"; test -x /usr/bin/srun && echo image-has-srun'
JOB
  sbatch_wait "$WORK/inner.sh" inner
  expect "sbatch succeeds" equals "$RC" 0
  expect "the script's srun ran a step of two tasks" equals "$(grep -c '^step 0 task [01]$' <<<"$LOG")" 2
  expect "... in the image" equals "$(grep -c image-has-srun <<<"$LOG")" 2
  expect "nothing left after it" wait_until 20 no_cri_objects "$JOB"
  site_reset
}

# A user's own enroot configuration (~/.config/enroot, or $ENROOT_CONFIG_PATH; crispd
# --enroot-user-config): its mounts.d,
# environ.d and hooks.d reach their containers after the site's, read and resolved with their
# rights; it cannot name what they could not reach, and a bad line is one line.
test_users_own_enroot_configuration_applies_to_them_alone() {
  site_reset
  CRISPD_ARGS="$CRISPD_ARGS --enroot-user-config" start_crispd
  site_file "$SITE_CONFIG_DIR/environ.d/10.env" "WHO_WINS=site"
  local conf=/home/$TEST_USER/.config/enroot
  as_user sh -c "mkdir -p $conf/mounts.d $conf/environ.d $conf/hooks.d $WORK/mine && echo my-data >$WORK/mine/file
    echo 'WHO_WINS=mine' >$conf/environ.d/10.env
    echo '\${HOME}/crisp-it/mine /mine none x-create=dir,bind,ro' >$conf/mounts.d/10.fstab
    printf '#!/bin/sh\necho \"MY_HOOK=\$(id -un)\" >>\"\$ENROOT_ENVIRON\"\n' >$conf/hooks.d/10-mine.sh
    chmod 0755 $conf/hooks.d/10-mine.sh"
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" sh -c 'echo "$WHO_WINS $MY_HOOK"; cat /mine/file'
  expect "the user's variables (after the site's), hook and mount" equals "$OUT" "mine $TEST_USER"$'\nmy-data'
  run "${SRUN[@]}" --container-image="$TEST_IMAGE" sh -c 'echo "[$WHO_WINS] [${MY_HOOK-}]"'
  expect "another user's (root's) job gets none of it" equals "$OUT" "[site] []"
  as_user sh -c "echo '/var/tmp/crisp-it/secret/file /secret none bind' >$conf/mounts.d/20-theirs.fstab"
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" cat /secret
  expect_crisp_error "the user's file naming what they cannot reach" "mounts.d/20-theirs.fstab:1: mount source"
  expect "... gives nothing of it" lacks "$OUT" top-secret
  as_user rm -rf "$conf/mounts.d" "$conf/environ.d" "$conf/hooks.d" "$WORK/mine"
  start_crispd
  site_reset
}
