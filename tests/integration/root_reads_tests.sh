# Attacks on what crispd reads or mounts as root on a user's behalf (issue 28): each
# run as the test user, each must fail safely: refused or harmless, crispd serving
# the next step, nothing left behind. Sourced by run.sh.

RACE_IMAGE=$REGISTRY/crisp-test/import-race:latest
# What containerd keeps of an import: its views of an image's layers and their leases.
import_views() { { "${CTR[@]}" snapshots ls; "${CTR[@]}" leases ls; } 2>/dev/null | grep -c crisp-view; }
# The squashfs files of user processes' roots that the kernel has on a loop device.
loops_of_evil() { losetup -l -n -O BACK-FILE 2>/dev/null | grep -c evil.sqsh; }
mksquashfs_runs() { pgrep -x mksquashfs >/dev/null; }
import_stages() { find /run/crisp -maxdepth 2 -name 'import-*' 2>/dev/null | wc -l; }

# crispctl import once read, as root, the root of a container whose holder was the user's:
# a file swapped for a symlink to a root-only file between mksquashfs's scan and its read
# landed in the user's squashfs. The attacker swaps every /w file of every root of theirs,
# over and over, for as long as the import runs.
test_import_reads_nothing_a_user_can_swap() {
  local marker=crisp-secret-$RANDOM$RANDOM
  echo "$marker" >/var/tmp/crisp-it-secret && chmod 600 /var/tmp/crisp-it-secret
  "${CRISPCTL[@]}" pull "$RACE_IMAGE" >/dev/null  # the pull is no part of the race
  "${CRISPCTL[@]}" rm --spares >/dev/null  # a spare of that image would be a root of the user's with a /w
  rm -f "$WORK/race.sqsh" /tmp/crisp-it.stop
  as_user bash -c 'seen=0; until [[ -e /tmp/crisp-it.stop ]]; do
      for root in /proc/[0-9]*/root; do
        [[ -d $root/w ]] || continue; seen=$((seen + 1))
        for f in "$root"/w/z*; do ln -sfn /var/tmp/crisp-it-secret "$f.n" 2>/dev/null && mv -f "$f.n" "$f" 2>/dev/null; done
      done
    done; echo "$seen"' >/tmp/crisp-it.seen 2>/dev/null &
  local attacker=$!
  run as_user "${CRISPCTL[@]}" import "$RACE_IMAGE" race.sqsh
  touch /tmp/crisp-it.stop
  wait "$attacker"
  expect "the import is written ($ERR)" contains "$OUT" "-> $WORK/race.sqsh"
  expect "no process of the user's lived in what root read ($(cat /tmp/crisp-it.seen) roots seen)" \
    equals "$(cat /tmp/crisp-it.seen)" 0
  local files; files=$(for i in $(seq -w 0 31); do unsquashfs -cat "$WORK/race.sqsh" "w/z$i"; done 2>/dev/null)
  expect "the user's file holds no root-only byte" lacks "$files" "$marker"
  expect "... and the image's files as they are" equals "$(sort -u <<<"$files")" "plain"
  expect "no view of the image is left in containerd" equals "$(import_views)" 0
  expect "... nor crispd's directory for it" equals "$(import_stages)" 0
  rm -f /var/tmp/crisp-it-secret /tmp/crisp-it.stop "$WORK/race.sqsh"
  expect "the next step runs" next_step_runs
}

# Imports run outside any job: one per user and a few per node, in crisp's bounded cgroup.
test_imports_are_bounded() {
  "${CRISPCTL[@]}" pull "$RACE_IMAGE" >/dev/null
  rm -f "$WORK"/bound*.sqsh
  as_user "${CRISPCTL[@]}" import "$RACE_IMAGE" bound1.sqsh >/tmp/crisp-it.bound 2>&1 &
  local first=$!
  expect "the import's mksquashfs starts" wait_until 30 mksquashfs_runs
  local pid; pid=$(pgrep -x mksquashfs | head -1)
  run as_user "${CRISPCTL[@]}" import "$RACE_IMAGE" bound2.sqsh
  expect "a second import of the user's at once is refused" equals "$((RC != 0))" 1
  expect "... with one line naming the limit ($ERR)" contains "$ERR" "crisp: crispctl import refused: you already run 1"
  local groups; groups=$(cat "/proc/$pid/cgroup" 2>/dev/null)
  expect "the running mksquashfs is in crisp's cgroup for CPU ($groups)" grep -qE ':cpu(,cpuacct)?:/crisp/squashfs$' <<<"$groups"
  expect "... and for memory" contains "$groups" ":memory:/crisp/squashfs"
  expect "... which has a memory limit" equals "$(cat /sys/fs/cgroup/memory/crisp/squashfs/memory.limit_in_bytes)" \
    $((2 << 30))
  expect "... and a CPU quota" equals "$(cat /sys/fs/cgroup/cpu/crisp/squashfs/cpu.cfs_quota_us)" 100000
  local t0=$SECONDS
  expect "a step starts meanwhile" next_step_runs
  expect "... promptly ($((SECONDS - t0)) s)" equals "$((SECONDS - t0 < 10))" 1
  wait "$first"
  expect "the first import ends well" contains "$(cat /tmp/crisp-it.bound)" "-> $WORK/bound1.sqsh"
  run as_user "${CRISPCTL[@]}" import "$RACE_IMAGE" bound3.sqsh
  expect "once it ended, the user may import again" contains "$OUT" "-> $WORK/bound3.sqsh"
  expect "nothing of the imports is left in containerd" equals "$(import_views)" 0
  rm -f "$WORK"/bound*.sqsh
}

# An image's entrypoint (the user's code) that makes a user and mount namespace of its own,
# stacks an overlay naming host paths on /, then execs the holder: crispd once took the layer
# directories from that holder's mountinfo. Now they come from containerd, and a holder out of
# runc's namespaces is refused.
test_entrypoint_namespaces_of_its_own_are_refused() {
  local name=crisp-it-nsentry-$RANDOM
  run as_user "${SRUN[@]}" -J "$name" --container-image="$REGISTRY/crisp-test/ns-entrypoint:latest" --container-entrypoint true
  expect_crisp_error "an entrypoint that leaves runc's namespaces" "left the namespaces it was started in"
  local job; job=$(last_job_named "$name")
  expect "nothing of the job is left in containerd" wait_until 30 no_cri_objects "$job"
  expect "no overlay of the entrypoint's is mounted on the host" equals "$(grep -c 'lowerdir=//etc' /proc/self/mountinfo)" 0
  expect "no crisp-fs was made outside containerd's snapshots" equals \
    "$(find /etc /var/tmp /tmp -maxdepth 2 -name 'crisp-fs' 2>/dev/null | wc -l)" 0
  expect "the next step runs" next_step_runs
}

# A squashfs image behind a magic link (/proc/PID/root/…, a container's file that its layer
# shows as root's) once went to the kernel's parser. Now no magic link is followed.
test_squashfs_gate_takes_no_magic_link() {
  local name=crisp-it-magic-$RANDOM
  as_user "${SRUN[@]}" -J "$name" --container-image="$RACE_IMAGE" sleep 60 >/dev/null 2>&1 &
  local srun=$! job holder task
  job=$(running_job "$name")
  holder=$(pgrep -u "$TEST_USER" -f "^/.crisp/holder [1-9]" | head -1)  # the step's (a spare's watches no slurmstepd: 0)
  task=$(pgrep -u "$TEST_USER" -x sleep | head -1)
  for pid in "$holder" "$task"; do
    run as_user "${SRUN[@]}" --container-image="/proc/$pid/root/evil.sqsh" cat /etc/evil
    expect "/proc/$pid/root/evil.sqsh: refused" equals "$((RC != 0))" 1
    expect "... with one crisp: line ($ERR)" one_crisp_line "$ERR"
    expect "... and never on a loop device" equals "$(loops_of_evil)" 0
  done
  scancel "$job" 2>/dev/null
  wait "$srun" 2>/dev/null
  expect "nothing of the job is left" wait_until 60 no_cri_objects "$job"
  expect "the next step runs" next_step_runs
}
