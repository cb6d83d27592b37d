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
