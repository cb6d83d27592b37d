# Namespaces as Pyxis uses them (its exec.bats and unshare*.bats): attaching to a
# running step, and --container-unshare. As the test user. Sourced by run.sh.

# One allocation: a remapped root mounts a tmpfs in a running step of a named container;
# what steps attaching to it (and one that will not) see.
test_attach_to_a_running_step() {
  in_allocation "
    srun --container-image=$DEBIAN_IMAGE --container-name=att mkdir -p /mymnt
    srun --container-name=att --container-remap-root bash -c 'mount -t tmpfs none /mymnt && cd /var && sleep 8' &
    sleep 3
    echo attach=\$(srun --overlap --container-name=att findmnt -n -o FSTYPE /mymnt)
    echo pwd=\$(srun --overlap --container-name=att pwd)
    srun --overlap --container-name=att:no_exec findmnt /mymnt >/dev/null; echo no_exec=\$?
    srun --overlap --container-name=att --container-mounts=/tmp:/mnt/x sh -c 'test -d /mnt/x'; echo mounts=\$?
    wait
    srun --container-name=att:exec true; echo exec_after=\$?
  "
  as_user /usr/local/bin/crispctl --socket "$CRISPD_SOCK" rm att >/dev/null 2>&1
  expect "the step attached to sees the tmpfs its remapped root mounted" contains "$OUT" "attach=tmpfs"
  expect "an attached step starts in the image's directory, not the running step's" contains "$OUT" "pwd=/"
  expect ":no_exec does not attach: no such mount" contains "$OUT" "no_exec=1"
  expect "mounts given when attaching are not applied" contains "$OUT" "mounts=1"
  expect "... and the user hears so" contains "$ERR" "crisp: ignoring --container-mounts when attaching to a running container"
  expect ":exec with no step running fails" contains "$OUT" "exec_after=1"
  expect "... saying why" contains "$ERR" "no step of the container named att is running on this node"
}

# srun --overlap --jobid J --container-name=J.S: a shell in a running training step.
test_attach_to_a_running_unnamed_step_by_its_id() {
  local name=crisp-it-jobstep-$RANDOM
  as_user "${SRUN[@]}" -J "$name" --container-image="$DEBIAN_IMAGE" --container-remap-root \
    bash -c 'mkdir -p /run/probe && mount -t tmpfs none /run/probe && touch /run/probe/here && sleep 20' >/dev/null 2>&1 &
  local srun=$! job
  job=$(running_job "$name")
  run as_user "${SRUN[@]}" --overlap --jobid "$job" --container-name="$job.0" sh -c 'ls /run/probe; id -u'
  expect "the running step's container is joined as JOBID.STEPID" equals "$OUT" $'here\n0'
  # Root's own step of the same image, by its id: never the test user's to join.
  srun -J "$name-root" --container-image="$TEST_IMAGE" sleep 20 >/dev/null 2>&1 &
  local root_srun=$! root_job
  root_job=$(running_job "$name-root")
  run as_user "${SRUN[@]}" --overlap --jobid "$job" --container-name="$root_job.0" true
  expect_crisp_error "another user's running step" "there is no container named $root_job.0"
  scancel "$job" "$root_job"
  wait "$srun" "$root_srun" 2>/dev/null
}

# --container-unshare's three namespaces, each checked from inside and from the host.
test_unshare_net_ipc_uts() {
  local host_net host_ipc host_uts
  host_net=$(readlink /proc/self/ns/net) host_ipc=$(readlink /proc/self/ns/ipc) host_uts=$(readlink /proc/self/ns/uts)
  run as_user "${SRUN[@]}" -n4 --container-unshare=net,ipc,uts --container-image="$DEBIAN_IMAGE" \
    sh -c 'readlink /proc/self/ns/net /proc/self/ns/ipc /proc/self/ns/uts'
  expect "the step's four tasks share one network, IPC and UTS namespace" equals "$(sort -u <<<"$OUT" | wc -l)" 3
  expect "... none the host's" lacks "$OUT" "$host_net"
  expect "... not the IPC's" lacks "$OUT" "$host_ipc"
  expect "... nor the UTS's" lacks "$OUT" "$host_uts"
  run as_user "${SRUN[@]}" --container-unshare=net --container-image="$DEBIAN_IMAGE" \
    bash -c 'tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " "; exec </dev/tcp/127.0.0.1/65535'
  expect "net: loopback is the only interface" equals "$OUT" "lo"
  expect "... and it is up" contains "$ERR" "Connection refused"
  run as_user "${SRUN[@]}" --container-unshare=net --container-image="$DEBIAN_IMAGE" bash -c 'exec </dev/tcp/127.0.0.1/5000'
  expect "... the host's registry on its loopback is out of reach" contains "$ERR" "Connection refused"
  local before; before=$(ipcs -m)
  run as_user "${SRUN[@]}" --container-unshare=ipc --container-image="$DEBIAN_IMAGE" \
    bash -c 'ipcmk -M 1M >/dev/null && ipcs -m | grep -c "^0x"; stat -c %d /dev/shm /dev/mqueue; findmnt -n -o FSTYPE /dev/mqueue'
  expect "ipc: a SysV segment made inside is there" equals "$(head -1 <<<"$OUT")" 1
  expect "... and never on the host" equals "$(ipcs -m)" "$before"
  expect "... /dev/shm is not the host's" lacks "$(sed -n 2p <<<"$OUT")" "$(stat -c %d /dev/shm)"
  expect "... /dev/mqueue is the namespace's own" equals "$(tail -1 <<<"$OUT")" mqueue
  run as_user "${SRUN[@]}" --container-unshare=uts --container-remap-root --container-image="$DEBIAN_IMAGE" \
    bash -c 'hostname; hostname crisp-inside && hostname'
  expect "uts: the host's name at first, then the one remapped root set" equals "$OUT" "$(hostname)"$'\ncrisp-inside'
  expect "... the host's name is untouched" lacks "$(hostname)" "crisp-inside"
  run as_user "${SRUN[@]}" --container-image="$DEBIAN_IMAGE" readlink /proc/self/ns/net
  expect "without the option the step is in the host's network" equals "$OUT" "$host_net"
}

test_unshare_refuses_unknown_namespaces_before_allocation() {
  local name=crisp-it-unshare-foo-$RANDOM
  run as_user "${SRUN[@]}" -J "$name" --container-unshare=net,foo --container-image="$TEST_IMAGE" true
  expect_crisp_error "--container-unshare=net,foo" "unknown namespace 'foo'"
  expect "no job was allocated" no_job_named "$name"
  run env PYXIS_CONTAINER_UNSHARE=net runuser -u "$TEST_USER" -- "${SRUN[@]}" --container-image="$TEST_IMAGE" \
    readlink /proc/self/ns/net
  expect "PYXIS_CONTAINER_UNSHARE=net gives a network namespace" contains "$OUT" "net:["
  expect "... not the host's" lacks "$OUT" "$(readlink /proc/self/ns/net)"
}

# A step joining a running named container enters its namespaces; asking for one it lacks fails.
test_joining_with_and_without_namespaces() {
  in_allocation "
    srun --container-image=$DEBIAN_IMAGE --container-name=nsipc --container-unshare=ipc,uts sleep 8 &
    srun --overlap --container-image=$DEBIAN_IMAGE --container-name=nsnone sleep 8 &
    sleep 4
    echo joined=\$(srun --overlap --container-name=nsipc readlink /proc/self/ns/ipc)
    echo asked=\$(srun --overlap --container-name=nsipc --container-unshare=ipc readlink /proc/self/ns/uts)
    srun --overlap --container-name=nsnone --container-unshare=net true; echo lacking=\$?
    wait
  "
  as_user /usr/local/bin/crispctl --socket "$CRISPD_SOCK" rm nsipc >/dev/null 2>&1
  as_user /usr/local/bin/crispctl --socket "$CRISPD_SOCK" rm nsnone >/dev/null 2>&1
  expect "a joining step without the option enters an IPC namespace" contains "$OUT" "joined=ipc:["
  expect "... the container's, not the host's" lacks "$(grep joined= <<<"$OUT")" "$(readlink /proc/self/ns/ipc)"
  expect "with it, too, and into the container's UTS namespace" contains "$OUT" "asked=uts:["
  expect "... not the host's" lacks "$(grep asked= <<<"$OUT")" "$(readlink /proc/self/ns/uts)"
  expect "asking for one the container lacks fails" contains "$OUT" "lacking=1"
  expect "... in Pyxis's words" contains "$ERR" \
    "crisp: --container-unshare=net requested but the container is not in a separate network namespace"
}
