# Images: pulls merged per image, a slow pull inside Slurm's timeouts, a missing image, crispctl pull.
# Sourced by run.sh.

test_concurrent_pulls_are_merged() {
  # A new image (its own 64 MB layer): the pull takes long enough to overlap.
  local tag=uncached-$RANDOM$RANDOM
  push_unique_image "crisp-test/busybox:$tag" 64
  local layer; layer=$(skopeo inspect --tls-verify=false --raw "docker://$REGISTRY/crisp-test/busybox:$tag" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["layers"][-1]["digest"])')
  settle
  local started0 merged0 cached0; started0=$(stat_of pulls_started); merged0=$(stat_of pulls_merged); cached0=$(stat_of pulls_cached)
  local log_lines0; log_lines0=$(wc -l <"$LOGS/registry.log")
  as_user "${SRUN[@]}" --container-image="$REGISTRY/crisp-test/busybox:$tag" test -f /payload >/tmp/crisp-it.a 2>&1 &
  local a=$!
  as_user "${SRUN[@]}" --container-image="$REGISTRY/crisp-test/busybox:$tag" test -f /payload >/tmp/crisp-it.b 2>&1 &
  local b=$!
  wait $a; local rca=$?; wait $b; local rcb=$?
  expect "both steps succeed" equals "$rca$rcb" 00
  # The jobs' prologs ask first (PrologFlags=Alloc): one starts the pull, the steps wait on it.
  expect "one CRI pull" equals "$(($(stat_of pulls_started) - started0))" 1
  expect "both steps waited on it or found it" equals "$(($(stat_of pulls_merged) - merged0 + $(stat_of pulls_cached) - cached0))" 2
  expect "a request overlapped the pull" equals "$(($(stat_of pulls_merged) - merged0 >= 1))" 1
  local blob_gets; blob_gets=$(tail -n +"$((log_lines0 + 1))" "$LOGS/registry.log" | grep -c "GET /v2/crisp-test/busybox/blobs/$layer")
  expect "the registry served the new layer once ($layer)" equals "$blob_gets" 1
}

# push_unique_image NAME:TAG MB: the test image plus a layer of its own, which no node has.
push_unique_image() {
  local ref=$1 mb=$2 dir; dir=$(mktemp -d)
  skopeo copy --quiet --src-tls-verify=false "docker://$TEST_IMAGE" "oci:$dir/oci:base" &&
    umoci unpack --image "$dir/oci:base" "$dir/b" >/dev/null &&
    head -c "${mb}M" /dev/urandom >"$dir/b/rootfs/payload" &&
    umoci repack --image "$dir/oci:base" "$dir/b" &&
    skopeo copy --quiet --dest-tls-verify=false "oci:$dir/oci:base" "docker://$REGISTRY/$ref"
  local rc=$?
  rm -rf "$dir"
  return $rc
}

# serve_slowly TAG DELAY: pushes a fresh image crisp-test/busybox:TAG (never on a node yet)
# and serves it at 127.0.0.1:5001, each blob DELAY seconds late; SLOW_PROXY is the proxy's pid.
serve_slowly() {
  push_unique_image "crisp-test/busybox:$1" 1
  python3 "$CRISP_SRC/tests/integration/slow_registry.py" 5001 5000 "$2" 2>"$LOGS/slow-registry.log" &
  SLOW_PROXY=$!
  wait_until 10 curl -sf -o /dev/null http://127.0.0.1:5001/v2/
}

test_long_cold_pull_trips_no_slurm_timeout() {
  # Every blob takes 12 s through this proxy: the pull outlasts Slurm's MessageTimeout (10 s) twice over.
  local tag=slow-$RANDOM$RANDOM
  serve_slowly "$tag" 12
  local proxy=$SLOW_PROXY t0=$SECONDS
  run as_user "${SRUN[@]}" --container-image="127.0.0.1:5001/crisp-test/busybox:$tag" sh -c 'test -f /payload && echo pulled-and-ran'
  local took=$((SECONDS - t0))
  kill "$proxy"; wait "$proxy" 2>/dev/null
  expect "the pull was slow (${took}s)" equals "$((took >= 20))" 1
  expect "the step still ran" equals "$OUT" "pulled-and-ran"
  expect "srun succeeded" equals "$RC" 0
  expect "no Slurm timeout" lacks "$ERR" "imed out"
}

test_missing_image_fails_fast() {
  local t0=$SECONDS name=crisp-it-missing-$RANDOM
  run as_user "${SRUN[@]}" -J "$name" --container-image="$REGISTRY/crisp-test/does-not-exist:1" true
  local job; job=$(last_job_named "$name")
  expect "within 10 s" equals "$((SECONDS - t0 < 10))" 1
  expect_crisp_error "missing image" "crisp: image $REGISTRY/crisp-test/does-not-exist:1 was not found in its registry"
  expect "nothing left in containerd" equals "$(cri_objects "$job")" 0
}

test_crispctl_pull() {
  run "${CRISPCTL[@]}" pull "$DEBIAN_IMAGE"
  expect "pull succeeds" equals "$RC" 0
  expect "names the image" contains "$OUT" "$DEBIAN_IMAGE ready in"
  expect "it is in containerd's store" contains "$("${CTR[@]}" images ls -q)" "$DEBIAN_IMAGE"
  run runuser -u "$TEST_USER" -- "${CRISPCTL[@]}" pull "$DEBIAN_IMAGE"
  expect "a user may not pull" contains "$ERR" "crisp: pulling an image is reserved to root"
  run "${CRISPCTL[@]}" pull "Not/Valid"
  expect "bad reference named" contains "$ERR" "crisp: invalid image reference 'Not/Valid'"
}
