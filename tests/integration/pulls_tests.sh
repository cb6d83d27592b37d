# Images at cluster scale: the prolog's pull, cancelling a pull, progress lines,
# the stall limit, the pull-through cache, each registry error's line, a full
# disk. Sourced by run.sh; images_tests.sh's helpers (push_unique_image).

# stat_on NODE KEY: crispd's counter on the dev cluster's first node or on node 2.
stat_on() {
  [[ $1 == "$NODE2" ]] || { stat_of "$2"; return; }
  in_node2 "${CRISPCTL[@]}" stats | awk -v k="$2" '$1 == k {print $2}'
}

# trickle TAG MB RATE: a fresh image crisp-test/busybox:TAG with an MB layer, served at
# 127.0.0.1:5001 at RATE bytes a second; SLOW_PROXY is the proxy's pid.
trickle() {
  push_unique_image "crisp-test/busybox:$1" "$2"
  python3 "$CRISP_SRC/tests/integration/slow_registry.py" 5001 5000 0 "$3" 2>"$LOGS/slow-registry.log" &
  SLOW_PROXY=$!
  wait_until 10 curl -sf -o /dev/null http://127.0.0.1:5001/v2/
}
stop_proxy() { kill -CONT "$SLOW_PROXY" 2>/dev/null; kill "$SLOW_PROXY" 2>/dev/null; wait "$SLOW_PROXY" 2>/dev/null; }
# No ingest of containerd's content store left (a failed or cut pull's partial downloads).
no_ingests() { [[ $("${CTR[@]}" content active | tail -n +2) == "" ]]; }

test_prolog_pulls_the_jobs_image() {
  local tag=prolog-$RANDOM$RANDOM n1; n1=$(hostname -s)
  push_unique_image "crisp-test/busybox:$tag" 16
  local img=$REGISTRY/crisp-test/busybox:$tag
  settle
  declare -A before
  for n in "$n1" "$NODE2"; do for k in prefetches prefetch_pulls pulls_started pulls_cached pulls_merged; do
    before[$n.$k]=$(stat_on "$n" "$k"); done; done
  # The allocation names the image; its first step comes 5 s later.
  run as_user salloc -Q -p multi -N2 --container-image="$img" \
    bash -c "sleep 5; srun --container-image=$img sh -c 'test -f /payload && echo ok'"
  expect "the steps ran on both nodes" equals "$OUT" $'ok\nok'
  for n in "$n1" "$NODE2"; do
    delta() { echo $(($(stat_on "$n" "$1") - ${before[$n.$1]})); }
    expect "$n: the prolog asked for the image" equals "$(delta prefetches)" 1
    expect "$n: the prolog's pull" equals "$(delta prefetch_pulls)$(delta pulls_started)" 11
    expect "$n: the first step found the image present" equals "$(delta pulls_cached)$(delta pulls_merged)" 10
  done
  local p0; p0=$(stat_on "$n1" prefetches)
  run as_user srun -p multi -N2 true
  expect "a job without an image asks for nothing" equals "$(stat_on "$n1" prefetches)" "$p0"
}

test_scancel_during_a_slow_pull_ends_the_job() {
  local tag=cancel-$RANDOM$RANDOM
  trickle "$tag" 64 1000000
  rm -f /tmp/crisp-it.cancel  # the wait below must not find an earlier run's line
  as_user "${SRUN[@]}" -J "crisp-it-$tag" --container-image="127.0.0.1:5001/crisp-test/busybox:$tag" true \
    >/tmp/crisp-it.cancel 2>&1 &
  local srun=$!
  wait_until 15 grep -q "crisp: pulling" /tmp/crisp-it.cancel
  local job t0; job=$(last_job_named "crisp-it-$tag"); t0=$SECONDS
  scancel "$job"
  wait_until 30 job_finished "$job"
  local took=$((SECONDS - t0))
  wait "$srun"
  stop_proxy
  expect "the job ended within 15 s of scancel (${took} s)" equals "$((took <= 15))" 1
  expect "nothing of it in the CRI" equals "$(cri_objects "$job")" 0
  expect "the user is told" contains "$(cat /tmp/crisp-it.cancel)" "was cancelled while its image was pulled"
}

test_progress_lines_for_a_slow_pull_only() {
  local tag=progress-$RANDOM$RANDOM t0=$SECONDS
  trickle "$tag" 12 2000000
  run as_user "${SRUN[@]}" --container-image="127.0.0.1:5001/crisp-test/busybox:$tag" sh -c 'test -f /payload && echo ran'
  local took=$((SECONDS - t0)) lines; lines=$(grep -c "^crisp: pulling " <<<"$ERR")
  stop_proxy
  expect "the step ran" equals "$OUT" ran
  expect "progress in the image's size" contains "$ERR" "crisp: pulling 127.0.0.1:5001/crisp-test/busybox:$tag: "
  expect "with a total and a rate" grep -qE "^crisp: pulling [^ ]+: [0-9.]+ of [0-9.]+ MB, [0-9.]+ [kM]?B/s$" <<<"$ERR"
  expect "at most one line every 5 s ($lines in ${took} s)" equals "$((lines >= 1 && lines <= took / 5 + 1))" 1
  push_unique_image "crisp-test/busybox:fast-$tag" 1
  run as_user "${SRUN[@]}" --container-image="$REGISTRY/crisp-test/busybox:fast-$tag" true
  expect "a fast pull prints none" lacks "$ERR" "crisp: pulling"
  trickle "ctl-$tag" 8 2000000
  run "${CRISPCTL[@]}" pull "127.0.0.1:5001/crisp-test/busybox:ctl-$tag"
  stop_proxy
  expect "crispctl pull shows the same" contains "$ERR" "crisp: pulling 127.0.0.1:5001/crisp-test/busybox:ctl-$tag: "
}

test_stalled_registry_fails_within_the_stall_limit() {
  local tag=stall-$RANDOM$RANDOM stalled0; stalled0=$(stat_of pulls_stalled)
  trickle "$tag" 64 1000000
  rm -f /tmp/crisp-it.stall  # the wait below must not find an earlier run's line
  as_user "${SRUN[@]}" -J "crisp-it-$tag" --container-image="127.0.0.1:5001/crisp-test/busybox:$tag" true \
    >/tmp/crisp-it.stall 2>&1 &
  local srun=$!
  wait_until 15 grep -q "crisp: pulling" /tmp/crisp-it.stall
  kill -STOP "$SLOW_PROXY"
  local t0=$SECONDS job; job=$(last_job_named "crisp-it-$tag")
  wait "$srun"
  local rc=$? took=$((SECONDS - t0))
  stop_proxy
  # dev/lib.sh runs crispd with --pull-stall-timeout 20.
  expect "the step failed" equals "$rc" 1
  expect "after the 20 s stall limit (${took} s)" equals "$((took >= 18 && took <= 35))" 1
  expect "one line naming the registry" contains "$(cat /tmp/crisp-it.stall)" \
    "crisp: the registry 127.0.0.1:5001 sent nothing for 20 s while pulling image 127.0.0.1:5001/crisp-test/busybox:$tag"
  expect "counted as stalled" equals "$(($(stat_of pulls_stalled) - stalled0))" 1
  expect "its partial download is gone" wait_until 10 no_ingests
  expect "nothing in the CRI" equals "$(cri_objects "$job")" 0
}

test_two_nodes_pull_each_layer_once_through_the_cache() {
  local tag=cache-$RANDOM$RANDOM
  push_unique_image "crisp-test/busybox:$tag" 32
  # Its config and its own layer: the nodes have the others already.
  local blobs; blobs=$(skopeo inspect --tls-verify=false --raw "docker://$REGISTRY/crisp-test/busybox:$tag" |
    python3 -c 'import json,sys; m=json.load(sys.stdin); print(m["config"]["digest"], m["layers"][-1]["digest"])')
  local up0 cache0; up0=$(wc -l <"$LOGS/registry.log"); cache0=$(wc -l <"$LOGS/registry-cache-access.log")
  settle
  # Both nodes' prologs pull at once, through the cache (hosts.toml of $CACHE_NAME).
  run as_user srun -p multi -N2 --container-image="$CACHE_NAME/crisp-test/busybox:$tag" sh -c 'test -f /payload && echo ok'
  expect "ran on both nodes" equals "$OUT" $'ok\nok'
  local b served asked
  for b in $blobs; do
    served=$(tail -n +"$((up0 + 1))" "$LOGS/registry.log" | grep -c "GET /v2/crisp-test/busybox/blobs/$b")
    asked=$(tail -n +"$((cache0 + 1))" "$LOGS/registry-cache-access.log" | grep -c "GET /v2/crisp-test/busybox/blobs/$b")
    expect "the registry served ${b:7:12} once" equals "$served" 1
    expect "both nodes asked the cache for ${b:7:12}" equals "$asked" 2
  done
}

test_registry_errors_each_get_their_line() {
  local dir; dir=$(mktemp -d)
  openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 -keyout "$dir/key" -out "$dir/cert" 2>/dev/null
  python3 "$CRISP_SRC/tests/integration/error_registry.py" 5004 2>"$LOGS/error-registry.log" &
  local plain=$!
  python3 "$CRISP_SRC/tests/integration/error_registry.py" 5443 --tls "$dir/cert" "$dir/key" 2>>"$LOGS/error-registry.log" &
  local tls=$!
  mkdir -p /etc/crisp/containerd/certs.d/tls.crisp.test
  # containerd 1.6 refuses a hosts.toml without a [host] table ("invalid `host` tree").
  printf 'server = "https://127.0.0.1:5443"\n[host."https://127.0.0.1:5443"]\n  capabilities = ["pull", "resolve"]\n' \
    >/etc/crisp/containerd/certs.d/tls.crisp.test/hosts.toml
  wait_until 10 curl -sf -o /dev/null http://127.0.0.1:5004/v2/
  local img reg=127.0.0.1:5004 log0 name; log0=$(wc -l <"$LOGS/crispd.log")
  for img in "$reg/401/x:1" "$reg/403/x:1" "$reg/404/x:1" "$reg/429/x:1" tls.crisp.test/x:1 no-such-registry.invalid/x:1; do
    name=crisp-it-registry-error-$RANDOM
    run as_user "${SRUN[@]}" -J "$name" --container-image="$img" true
    ERRORS[$img]=$ERR
    # Progress lines aside (a 429 is tried again after a pause).
    expect "$img: one crisp line" one_crisp_line "$(grep -v '^crisp: pulling ' <<<"$ERR")"
    expect "$img: nothing in the CRI" equals "$(cri_objects "$(last_job_named "$name")")" 0
  done
  expect_line() { expect "$1" contains "${ERRORS[$1]}" "crisp: $2"; }
  expect_line "$reg/401/x:1" "the registry $reg refused access to image $reg/401/x:1 (401 Unauthorized): put credentials"
  expect_line "$reg/403/x:1" "the registry $reg forbids access to image $reg/403/x:1 (403 Forbidden)"
  expect_line "$reg/404/x:1" "image $reg/404/x:1 was not found in its registry: check the name and tag"
  expect_line "$reg/429/x:1" "the registry $reg is limiting pulls (429 Too Many Requests) and still was after 2 more tries"
  expect "429: tried three times, no more" equals "$(tail -n +"$((log0 + 1))" "$LOGS/crispd.log" | grep -c "pull of $reg/429/x:1 failed")" 3
  expect_line tls.crisp.test/x:1 "the registry tls.crisp.test's TLS certificate is not trusted on this node"
  expect_line no-such-registry.invalid/x:1 "the registry no-such-registry.invalid's name does not resolve on this node"
  kill "$plain" "$tls"; wait "$plain" "$tls" 2>/dev/null
  rm -rf "$dir" /etc/crisp/containerd/certs.d/tls.crisp.test
}
declare -A ERRORS

test_full_disk_during_a_pull_leaves_nothing() {
  local content=/var/lib/crisp/containerd/io.containerd.content.v1.content tag=full-$RANDOM$RANDOM
  push_unique_image "crisp-test/busybox:$tag" 64
  # containerd's content store on an 8 MB filesystem for the length of this test: the
  # 64 MB layer cannot fit (the store's other blobs are out of sight meanwhile).
  mount -t tmpfs -o size=8m crisp-full "$content" || { expect "tmpfs over the content store" false; return; }
  mkdir -p "$content/ingest" "$content/blobs/sha256"
  run as_user "${SRUN[@]}" --container-image="$REGISTRY/crisp-test/busybox:$tag" true
  local used; used=$(du -sk "$content/ingest" | cut -f1)
  umount "$content"
  expect "one line" contains "$ERR" "crisp: the node ran out of disk space while pulling image $REGISTRY/crisp-test/busybox:$tag"
  expect "one crisp line" one_crisp_line "$ERR"
  expect "no partial download left (${used} kB in ingest/)" equals "$((used < 64))" 1
}

# Attack: a user starts pulls and cancels their steps, leaving the pulls to run on (as they
# do, for the next job): at most 4 of theirs at once, and crispd keeps serving.
test_a_user_cannot_pile_up_pulls() {
  local base=pile-$RANDOM i pids=()
  push_unique_image "crisp-test/busybox:$base" 16
  "${CRISPCTL[@]}" pull "$TEST_IMAGE" >/dev/null
  python3 "$CRISP_SRC/tests/integration/slow_registry.py" 5001 5000 0 200000 2>"$LOGS/slow-registry.log" &
  SLOW_PROXY=$!
  wait_until 10 curl -sf -o /dev/null http://127.0.0.1:5001/v2/
  # Five names of one slow image: five pulls as far as crispd can tell.
  for i in 1 2 3 4 5; do
    skopeo copy --quiet --src-tls-verify=false --dest-tls-verify=false "docker://$REGISTRY/crisp-test/busybox:$base" \
      "docker://$REGISTRY/crisp-test/busybox:$base-$i"
  done
  for i in 1 2 3 4; do
    as_user "${SRUN[@]}" --container-image="127.0.0.1:5001/crisp-test/busybox:$base-$i" true >/dev/null 2>&1 &
    pids+=($!)
  done
  wait_until 15 bash -c "[[ \$(grep -c 'pulling 127.0.0.1:5001/crisp-test/busybox:$base' $LOGS/crispd.log) -ge 4 ]]"
  run as_user "${SRUN[@]}" --container-image="127.0.0.1:5001/crisp-test/busybox:$base-5" true
  expect "the fifth is refused with a line" contains "$ERR" "crisp: you already have 4 image pulls under way on this node"
  expect "one crisp line" one_crisp_line "$ERR"
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" true
  expect "a step with an image present still runs" equals "$RC" 0
  scancel -u "$TEST_USER"
  wait "${pids[@]}" 2>/dev/null
  stop_proxy
  expect "the pulls end with the registry gone" wait_until 30 bash -c "[[ \$(tail -n 40 $LOGS/crispd.log | grep -c 'pull of 127.0.0.1:5001/crisp-test/busybox:$base-[1-4] failed') -ge 4 ]]"
}
