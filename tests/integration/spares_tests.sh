# Spare containers (crispd --spares): a user's next new job or unnamed step of an
# image claims the container crispd made ahead for them, and sees exactly what a
# container made for it would show. Sourced by run.sh, which runs these only on
# a cluster with spares (CRISP_SPARES is not 0); every other test runs either way.

spares_on() { [[ ${CRISP_SPARES:-8} != 0 ]]; }
spares_not_here() { spares_on || echo "crispd runs without spares here (CRISP_SPARES=0)"; }
# spare_ready UID [IMAGE]: crispd lists a spare of that user (and image) ready.
spare_ready() {
  "${CRISPCTL[@]}" ps | awk -v u="$1" -v i="${2:-$TEST_IMAGE}" 'NR > 1 && $2 == "spare" && $3 == u && $NF == i' | grep -q .
}
wait_for_spare() { wait_until 20 spare_ready "$@"; }
no_spare() { ! spare_ready "$@"; }
# What a step's container shows: its mount points and the device files it has.
container_view='awk "{print \$5 \":\" \$6}" /proc/self/mountinfo | sort | tr "\n" " "; echo
  stat -c "%A %u %g %t:%T %n" /dev/* /dev/infiniband/* /scratch /data /data/file "$1" "${1%/*}" | tr "\n" " "; echo; cat /data/file'

test_claimed_spare_shows_exactly_what_a_new_container_shows() {
  local uid; uid=$(id -u "$TEST_USER")
  settle
  as_user "${SRUN[@]}" -w "$(hostname -s)" --container-image="$TEST_IMAGE" \
    --container-mounts=/var/tmp/crisp-it/rw:/other,tmpfs:/othertmp true
  expect "a spare is made after the user's step" wait_for_spare "$uid"
  local claimed0; claimed0=$(stat_of spares_claimed)
  local opts=(-w "$(hostname -s)" --container-image="$TEST_IMAGE" --container-mounts=/var/tmp/crisp-it/ro:/data:ro,tmpfs:/scratch)
  run as_user "${SRUN[@]}" "${opts[@]}" sh -c "$container_view" view "$WORK"
  local with_spare=$OUT
  expect "the step claimed the spare" equals "$(($(stat_of spares_claimed) - claimed0))" 1
  expect "it sees its own mounts, nothing of the job before" lacks "$with_spare" /other
  expect "... its read-only mount's file" contains "$with_spare" read-only-data
  wait_for_spare "$uid"
  "${CRISPCTL[@]}" rm --spares >/dev/null
  run as_user "${SRUN[@]}" "${opts[@]}" sh -c "$container_view" view "$WORK"
  expect "a container made for the step (no spare left) was not a claim" equals "$(($(stat_of spares_claimed) - claimed0))" 1
  expect "the claimed spare's mounts, devices and owners are a new container's" equals "$with_spare" "$OUT"
  [[ $with_spare == "$OUT" ]] || diff <(tr ' ' '\n' <<<"$with_spare") <(tr ' ' '\n' <<<"$OUT") | head -20
}

# A burst of a user's steps (a sweep of srun ... &) is their image's demand: crispd keeps as
# many spares ready as steps were made at once, so the next burst claims more than one.
spare_ids_of() { "${CRISPCTL[@]}" ps | awk -v u="$1" -v i="$TEST_IMAGE" 'NR > 1 && $2 == "spare" && $3 == u && $NF == i {print $4}'; }
spares_of() { spare_ids_of "$1" | wc -l; }
at_least_spares() { (($(spares_of "$1") >= $2)); }
# burst_of N: N steps of the test user's image released together, waited for.
burst_of() {
  local i pids=()
  for ((i = 0; i < $1; i++)); do
    as_user "${SRUN[@]}" -w "$(hostname -s)" --container-image="$TEST_IMAGE" true &
    pids+=($!)
  done
  wait "${pids[@]}"
}
spares_made_all() { [[ $(stat_of spares_making) == 0 ]]; }
test_a_burst_of_steps_finds_spares_for_the_next_burst() {
  local uid; uid=$(id -u "$TEST_USER")
  "${CRISPCTL[@]}" rm --spares >/dev/null
  settle
  burst_of 6
  expect "more than one spare is made after the burst" wait_until 30 at_least_spares "$uid" 2
  expect "... and then no more" wait_until 30 spares_made_all
  settle
  local kept ready claimed0; kept=$(spare_ids_of "$uid"); ready=$(wc -l <<<"$kept"); claimed0=$(stat_of spares_claimed)
  expect "the burst's demand is kept ready, beyond the old limit of 2 a user" test "$ready" -ge 3
  burst_of 6
  # Slurm spreads the burst's jobs: a spare made between two of them may be claimed too.
  expect "the next burst claims every one" test "$(($(stat_of spares_claimed) - claimed0))" -ge "$ready"
  expect "... none of them is left a spare" equals "$(grep -cxF -f <(echo "$kept") <(spare_ids_of "$uid"))" 0
  "${CRISPCTL[@]}" rm --spares >/dev/null
}

# Two users (here the test user and root) with the same image never share one.
test_a_spare_is_never_another_users() {
  local uid; uid=$(id -u "$TEST_USER")
  settle
  as_user "${SRUN[@]}" -w "$(hostname -s)" --container-image="$TEST_IMAGE" true
  expect "the test user has a spare" wait_for_spare "$uid"
  local spare; spare=$("${CRISPCTL[@]}" ps | awk -v u="$uid" 'NR > 1 && $2 == "spare" && $3 == u {print $4}')
  local claimed0; claimed0=$(stat_of spares_claimed)
  run srun -w "$(hostname -s)" --container-image="$TEST_IMAGE" sh -c 'id -u; cat /proc/1/cgroup >/dev/null; echo ok'
  expect "root's step runs as root" equals "$OUT" "0
ok"
  expect "root's step claimed nothing" equals "$(stat_of spares_claimed)" "$claimed0"
  expect "the test user's spare is still theirs, unclaimed" contains "$("${CRISPCTL[@]}" ps)" "$spare"
  expect "the test user sees only their own spare" equals \
    "$(runuser -u "$TEST_USER" -- "${CRISPCTL[@]}" ps | awk -v me="$uid" 'NR > 1 && $3 != me' | wc -l)" 0
  expect "the user removes their own spares only" contains "$(runuser -u "$TEST_USER" -- "${CRISPCTL[@]}" rm --spares)" "removed 1 spare"
  expect "... and root's stays" wait_for_spare 0
  "${CRISPCTL[@]}" rm --spares >/dev/null
}

# A tag pushed anew after its spare was made: the step gets the new image, never the spare.
test_a_spare_of_a_moved_tag_is_passed_over() {
  local uid tag; uid=$(id -u "$TEST_USER"); tag=moved-$RANDOM$RANDOM
  push_unique_image "crisp-test/busybox:$tag" 1
  local image=$REGISTRY/crisp-test/busybox:$tag
  settle
  run as_user "${SRUN[@]}" -w "$(hostname -s)" --container-image="$image" md5sum /payload
  local first=$OUT
  expect "a spare of the tag is made" wait_for_spare "$uid" "$image"
  push_unique_image "crisp-test/busybox:$tag" 1
  # The node's store moves the tag (crispd pulls a present image no more, as enroot's cache would).
  "${CTR[@]}" images pull --plain-http "$image" >/dev/null
  local passed0; passed0=$(stat_of spares_passed_over)
  run as_user "${SRUN[@]}" -w "$(hostname -s)" --container-image="$image" md5sum /payload
  expect "the step runs the image the tag names now" equals "$((RC == 0)) $([[ $OUT != "$first" && -n $OUT ]] && echo new)" "1 new"
  expect "the stale spare was passed over" equals "$(($(stat_of spares_passed_over) - passed0))" 1
  "${CRISPCTL[@]}" rm --spares >/dev/null
}

# A claimed spare is its step's: scancel, a crispd restart between, leave nothing of it.
test_a_claimed_spare_goes_with_its_step() {
  local uid name job; uid=$(id -u "$TEST_USER"); name=crisp-it-spare-$RANDOM
  settle
  as_user "${SRUN[@]}" -w "$(hostname -s)" --container-image="$TEST_IMAGE" true
  expect "a spare is ready" wait_for_spare "$uid"
  local claimed0; claimed0=$(stat_of spares_claimed)
  as_user "${SRUN[@]}" -w "$(hostname -s)" -J "$name" --container-image="$TEST_IMAGE" sleep 60 >/dev/null 2>&1 &
  local pid=$!
  job=$(running_job "$name")
  expect "the job's step claimed it" equals "$(($(stat_of spares_claimed) - claimed0))" 1
  expect "crispctl ps lists it as the job's step" contains "$("${CRISPCTL[@]}" ps --job "$job")" "CONTAINER_RUNNING"
  start_crispd
  expect "a restarted crispd still knows it is the job's" contains "$("${CRISPCTL[@]}" ps --job "$job")" "CONTAINER_RUNNING"
  scancel "$job"; wait "$pid" 2>/dev/null
  expect "the job completes" wait_until 30 job_finished "$job"
  expect "nothing of it is left in containerd" wait_until 15 no_cri_objects "$job"
  expect "nor its claim record" equals "$(grep -lx "job=$job" /run/crisp/claims/* 2>/dev/null | wc -l)" 0
  "${CRISPCTL[@]}" rm --spares >/dev/null
}

# Unused spares go after --spare-grace; a cluster restarted with a short one shows it.
test_unused_spares_go_after_their_grace() {
  local uid; uid=$(id -u "$TEST_USER")
  CRISPD_ARGS="$CRISPD_ARGS --spare-grace 3" start_crispd
  as_user "${SRUN[@]}" -w "$(hostname -s)" --container-image="$TEST_IMAGE" true
  expect "a spare is made" wait_for_spare "$uid"
  local removed0; removed0=$(stat_of spares_removed)
  expect "it is gone after the grace and a sweep" wait_until 20 no_spare "$uid"
  one_removed() { [[ $(($(stat_of spares_removed) - removed0)) == 1 ]]; }
  expect "... counted" wait_until 10 one_removed
  start_crispd
}

# An image whose path to a mount target is a symlink: crispd (root) makes a claimed spare's
# mount points through none (a user's image could aim one anywhere in the container); the
# spare is passed over and the step gets what runc makes, the symlink followed inside the root.
test_a_symlink_in_the_image_never_leads_a_claims_mount() {
  local uid tag dir; uid=$(id -u "$TEST_USER"); tag=symlink-$RANDOM$RANDOM; dir=$(mktemp -d)
  skopeo copy --quiet --src-tls-verify=false "docker://$TEST_IMAGE" "oci:$dir/oci:base" &&
    umoci unpack --image "$dir/oci:base" "$dir/b" >/dev/null && mkdir -p "$dir/b/rootfs/real" &&
    ln -s /real "$dir/b/rootfs/data" && umoci repack --image "$dir/oci:base" "$dir/b" &&
    skopeo copy --quiet --dest-tls-verify=false "oci:$dir/oci:base" "docker://$REGISTRY/crisp-test/busybox:$tag"
  rm -rf "$dir"
  local image=$REGISTRY/crisp-test/busybox:$tag
  settle
  as_user "${SRUN[@]}" -w "$(hostname -s)" --container-image="$image" true
  expect "a spare of the image is made" wait_for_spare "$uid" "$image"
  local passed0; passed0=$(stat_of spares_passed_over)
  run as_user "${SRUN[@]}" -w "$(hostname -s)" --container-image="$image" --container-mounts=/var/tmp/crisp-it/ro:/data/in \
    cat /real/in/file
  expect "the step runs, its mount where runc puts it (through the image's symlink, inside)" equals "$OUT" read-only-data
  expect "the spare was passed over, not followed through the symlink" equals "$(($(stat_of spares_passed_over) - passed0))" 1
  expect "crispd says why" contains "$(tail -20 "$LOGS/crispd.log")" "cannot make the mount point /data/in"
  "${CRISPCTL[@]}" rm --spares >/dev/null
}
