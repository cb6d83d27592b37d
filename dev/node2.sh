# The dev cluster's second node on this one machine, sourced by up.sh and
# down.sh: its own network namespace (a veth to the host, 10.77.0.0/24) for
# slurmd, and its own mount namespace in which /run/crisp, /var/lib/crisp and
# slurmd's spool are the node's, so it runs its own containerd and crispd with
# the same paths and configuration as any node. /tmp is the node's too: Slurm's
# PMIx plugin makes per-step directories there that the nodes must not share.
NODE2=${CRISP_NODE2:-crisp-n2}  # dev/matrix.sh names it after the suite
NODE2_NETNS=crisp-n2
NODE1_IP=10.77.0.1
NODE2_IP=10.77.0.2
NODE2_MNT=$RUN/ns/node2.mnt
NODE2_DIRS=(/run/crisp /var/lib/crisp /var/spool/slurmd /tmp)

# in_node2 CMD...: runs CMD in the node's mount namespace (host network: pulls reach the registry on loopback).
in_node2() { nsenter --mount="$NODE2_MNT" -- "$@"; }
# in_node2_net CMD...: and in its network namespace, as slurmd and the tasks are.
in_node2_net() { nsenter --mount="$NODE2_MNT" --net="/run/netns/$NODE2_NETNS" -- "$@"; }

node2_namespaces() {
  if ! grep -qw "$NODE2_NETNS" <<<"$(ip netns list)"; then
    ip netns add "$NODE2_NETNS"
    ip link add crispn type veth peer name crispn-peer
    ip link set crispn-peer netns "$NODE2_NETNS"
    ip netns exec "$NODE2_NETNS" ip link set crispn-peer name crispn
    ip addr add "$NODE1_IP/24" dev crispn
    ip link set crispn up
    ip netns exec "$NODE2_NETNS" ip addr add "$NODE2_IP/24" dev crispn
    ip netns exec "$NODE2_NETNS" ip link set crispn up
    ip netns exec "$NODE2_NETNS" ip link set lo up
  fi
  if ! in_node2 true 2>/dev/null; then
    # A namespace file must sit on a private mount of this mount namespace.
    mkdir -p "$RUN/ns"
    mountpoint -q "$RUN/ns" || { mount --bind "$RUN/ns" "$RUN/ns" && mount --make-private "$RUN/ns"; }
    touch "$NODE2_MNT"
    if ! unshare --mount="$NODE2_MNT" --propagation private true 2>/dev/null; then
      # The mount kept from an earlier start can be another namespace's (a newer release's root
      # is entered afresh each time, dev/matrix.sh): the bind is refused; once more on a new one.
      umount -l "$RUN/ns" 2>/dev/null || true
      mount --bind "$RUN/ns" "$RUN/ns" && mount --make-private "$RUN/ns" && touch "$NODE2_MNT"
      unshare --mount="$NODE2_MNT" --propagation private true
    fi
  fi
  # Checked every time: a purge on the host may have removed a node directory.
  local d
  for d in "${NODE2_DIRS[@]}"; do
    mkdir -p "$d" "$d-n2"
    [[ $d == /tmp ]] && chmod 1777 "$d-n2"
    if ! in_node2 mountpoint -q "$d" || [[ $(in_node2 stat -c %i "$d") != $(stat -c %i "$d-n2") ]]; then
      in_node2 umount -l "$d" 2>/dev/null || true
      in_node2 mount --bind "$d-n2" "$d"
    fi
  done
}

node2_start() {
  say "starting node $NODE2: containerd, crispd, slurmd (namespaces of its own)"
  node2_namespaces
  start_daemon containerd-n2 "$RUN/containerd-n2.pid" nsenter --mount="$NODE2_MNT" -- \
    /usr/bin/containerd --config /etc/crisp/containerd.toml
  wait_for "containerd of $NODE2" 30 in_node2 ctr --address "$CONTAINERD_SOCK" version
  start_crispd_on "$NODE2" "$RUN/crispd-n2.pid" crispd-n2 nsenter --mount="$NODE2_MNT" --
}

node2_start_slurmd() {
  in_node2 test -f /var/spool/slurmd/slurmd.pid && in_node2 bash -c 'kill -0 $(cat /var/spool/slurmd/slurmd.pid)' 2>/dev/null &&
    return 1
  in_node2_net /usr/sbin/slurmd -N "$NODE2"
}

node2_stop_slurmd() {
  [[ -e $NODE2_MNT ]] && in_node2 true 2>/dev/null || return 0
  local pid
  pid=$(in_node2 cat /var/spool/slurmd/slurmd.pid 2>/dev/null || true)
  [[ -n $pid ]] && kill "$pid" 2>/dev/null || true
}

node2_stop() {
  [[ -e $NODE2_MNT ]] && in_node2 true 2>/dev/null || return 0
  node2_stop_slurmd
  stop_daemon "$RUN/crispd-n2.pid"
  if in_node2 test -S "$CONTAINERD_SOCK"; then
    for c in $(in_node2 ctr --address "$CONTAINERD_SOCK" -n k8s.io tasks ls -q 2>/dev/null); do
      in_node2 ctr --address "$CONTAINERD_SOCK" -n k8s.io tasks kill -s SIGKILL "$c" 2>/dev/null || true
    done
  fi
  stop_daemon "$RUN/containerd-n2.pid"
}

# Removes the namespaces; the node's state directories go only with --purge.
node2_remove() {
  umount "$NODE2_MNT" 2>/dev/null || true
  rm -f "$NODE2_MNT"
  ip netns del "$NODE2_NETNS" 2>/dev/null || true
  ip link del crispn 2>/dev/null || true
}
