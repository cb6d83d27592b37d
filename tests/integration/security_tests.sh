# What a user cannot do: bad input, other people's files, setuid, root's requests, others' jobs.
# Sourced by run.sh.

test_malformed_input_rejected_before_allocation() {
  local name=crisp-it-malformed-$RANDOM
  local named_srun=("${SRUN[@]}" -J "$name")
  run as_user "${named_srun[@]}" --container-image='UPPER/Case::x' true
  expect_crisp_error "bad image" "crisp: invalid image reference 'UPPER/Case::x'"
  run as_user "${named_srun[@]}" --container-image="$TEST_IMAGE" --container-mounts=/tmp:relative true
  expect_crisp_error "bad mount" "crisp: invalid --container-mounts entry '/tmp:relative'"
  run as_user "${named_srun[@]}" --container-image="$TEST_IMAGE" --container-mounts=/a:/b:bogus true
  expect_crisp_error "bad flag" "unknown flag 'bogus'"
  expect "no job was allocated" no_job_named "$name"
  expect "srun never asked for resources" lacks "$ERR" "allocated resources"
}

test_inaccessible_mount_source() {
  # The user reaches the 0700 directory, so it may be mounted (as with Pyxis); it stays closed.
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" --container-mounts=/var/tmp/crisp-it/secret:/s cat /s/file
  expect "the secret stays secret" lacks "$OUT" "top-secret"
  expect "reading it is denied inside" contains "$ERR" "Permission denied"
  local name=crisp-it-unreachable-$RANDOM
  run as_user "${SRUN[@]}" -J "$name" --container-image="$TEST_IMAGE" --container-mounts=/var/tmp/crisp-it/secret/file:/s cat /s
  local job; job=$(last_job_named "$name")
  expect "a source behind it is not even reached" lacks "$OUT" "top-secret"
  expect_crisp_error "unreachable source" "crisp: mount source /var/tmp/crisp-it/secret/file: Permission denied"
  expect "nothing left in containerd" equals "$(cri_objects "$job")" 0
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" --container-mounts=/no/such/src:/s true
  expect_crisp_error "missing source" "crisp: --container-mounts: source path does not exist: /no/such/src"
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

test_users_see_only_their_jobs() {
  local name=crisp-it-root-$RANDOM
  srun -J "$name" --container-image="$TEST_IMAGE" sleep 3 >/dev/null 2>&1 &
  local pid=$!
  running_job "$name" >/dev/null
  # (and root's spare container, once made after the step started: STEP "spare")
  expect "root sees root's step" equals "$("${CRISPCTL[@]}" ps | awk 'NR > 1 && $3 == 0 && $2 != "spare"' | wc -l)" 1
  expect "the test user does not (their own named ones may be listed)" equals \
    "$(runuser -u "$TEST_USER" -- "${CRISPCTL[@]}" ps | awk -v me="$(id -u "$TEST_USER")" 'NR > 1 && $3 != me' | wc -l)" 0
  wait "$pid"
}
