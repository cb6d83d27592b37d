#!/bin/bash
# Brings up the local two-node cluster on a fresh Debian 12 machine and runs a
# containerized job: packages, build, munged, slurmctld, two slurmd (the second
# in namespaces of its own, dev/node2.sh), crisp's own containerd and crispd on
# each node, a registry on 127.0.0.1, test images, the plugin.
#   dev/up.sh           everything, then the demo job
#   dev/up.sh --no-demo everything but the demo
source "$(dirname "$0")/lib.sh"
need_root
demo=1
[[ ${1:-} == --no-demo ]] && demo=0

install_packages
build_and_install
mkdir -p "$STATE" "$RUN" "$LOGS" /run/crisp /etc/crisp /var/lib/crisp

say "starting munged"
mkdir -p /run/munge /var/log/munge /var/lib/munge && chown munge:munge /run/munge /var/log/munge /var/lib/munge
[[ -f /etc/munge/munge.key ]] || { mungekey -c -k /etc/munge/munge.key; chown munge:munge /etc/munge/munge.key; }
if ! pgrep -x munged >/dev/null; then runuser -u munge -- /usr/sbin/munged; fi
wait_for munged 10 munge -n

say "starting the registry on $REGISTRY"
cat >/etc/crisp/dev-registry.yml <<REG
version: 0.1
log:
  level: info
storage:
  filesystem:
    rootdirectory: $STATE/registry
  delete:
    enabled: true
http:
  addr: $REGISTRY
REG
start_daemon registry "$RUN/registry.pid" /usr/bin/docker-registry serve /etc/crisp/dev-registry.yml
wait_for registry 15 curl -sf "http://$REGISTRY/v2/"
say "starting the registry that wants a login on $AUTH_REGISTRY"
if [[ ! -s /etc/crisp/dev-registry.htpasswd ]]; then
  # docker-registry takes bcrypt only.
  htpasswd -nbB "$AUTH_USER" "$AUTH_PASSWORD" | grep . \
    >/etc/crisp/dev-registry.htpasswd
fi
sed -e "s|$STATE/registry|$STATE/registry-auth|" -e "s|addr: $REGISTRY|addr: $AUTH_REGISTRY|" /etc/crisp/dev-registry.yml \
  >/etc/crisp/dev-registry-auth.yml
cat >>/etc/crisp/dev-registry-auth.yml <<REG
auth:
  htpasswd:
    realm: crisp-dev
    path: /etc/crisp/dev-registry.htpasswd
REG
start_daemon registry-auth "$RUN/registry-auth.pid" /usr/bin/docker-registry serve /etc/crisp/dev-registry-auth.yml
wait_for registry-auth 15 curl -sf -u "$AUTH_USER:$AUTH_PASSWORD" "http://$AUTH_REGISTRY/v2/"

say "starting the pull-through cache on $CACHE_REGISTRY (images named $CACHE_NAME/...)"
mkdir -p "$STATE/registry-cache/tmp"
chown -R nobody:nogroup "$STATE/registry-cache"  # nginx's workers
sed -e "s|@UPSTREAM@|http://$REGISTRY|" -e "s|@LISTEN@|$CACHE_REGISTRY|" -e "s|@CACHE@|$STATE/registry-cache|" \
  -e "s|@RUN@|$RUN|" -e "s|@LOG@|$LOGS/registry-cache.log|" -e "s|@ACCESS_LOG@|$LOGS/registry-cache-access.log|" \
  "$CRISP_SRC/conf-examples/registry-cache/nginx.conf" >/etc/crisp/dev-registry-cache.conf
start_daemon registry-cache "$RUN/registry-cache-daemon.pid" /usr/sbin/nginx -c /etc/crisp/dev-registry-cache.conf -g 'daemon off;'
wait_for registry-cache 15 curl -sf "http://$CACHE_REGISTRY/v2/"

say "starting crisp's containerd ($CONTAINERD_SOCK)"
# hosts_toml NAME SERVER HOST: containerd pulls images named NAME/... from plain-HTTP HOST, SERVER the last resort.
hosts_toml() {
  mkdir -p "/etc/crisp/containerd/certs.d/$1"
  printf 'server = "http://%s"\n\n[host."http://%s"]\n  capabilities = ["pull", "resolve"]\n' "$2" "$3" \
    >"/etc/crisp/containerd/certs.d/$1/hosts.toml"
}
# Images named $CACHE_NAME/... come through the cache, the registry itself the last resort.
hosts_toml "$CACHE_NAME" "$REGISTRY" "$CACHE_REGISTRY"
# The tests' slow registry (a proxy of $REGISTRY) speaks plain HTTP: said, as a site says it of
# one, rather than left to containerd's fallback for loopback (1.7 does not fall back from the
# proxy's answer to a TLS handshake).
hosts_toml 127.0.0.1:5001 127.0.0.1:5001 127.0.0.1:5001
# containerd 2.x reads configuration version 3.
containerd_conf=containerd-crisp.toml
[[ $(containerd --version | awk '{print $3}') =~ ^v?[2-9]\. ]] && containerd_conf=containerd-crisp-v3.toml
sed "s|@SANDBOX_IMAGE@|$SANDBOX_IMAGE|" "$CRISP_SRC/conf-examples/$containerd_conf" >/etc/crisp/containerd.toml
start_daemon containerd "$RUN/containerd.pid" /usr/bin/containerd --config /etc/crisp/containerd.toml
wait_for containerd 30 ctr --address "$CONTAINERD_SOCK" version

"$CRISP_SRC/dev/images/build.sh"

mkdir -p /etc/slurm
make_fake_gpus "$(hostname -s)"
say "starting crispd ($CRISPD_SOCK)"
start_crispd
node2_start

# Before Slurm starts: slurmctld caches group membership.
getent group "$TEST_GROUP" >/dev/null || groupadd -g 3001 "$TEST_GROUP"
id "$TEST_USER" >/dev/null 2>&1 || useradd -m -s /bin/bash -u 2001 -G "$TEST_GROUP" "$TEST_USER"

say "configuring and starting Slurm"
node=$(hostname -s)
mkdir -p /etc/slurm/plugstack.conf.d /var/spool/slurmctld /var/spool/slurmd /var/log/slurm
slurm_conf_sum() { cat /etc/slurm/slurm.conf /etc/slurm/cgroup.conf 2>/dev/null | md5sum || true; }
conf_before=$(slurm_conf_sum)
cat >/etc/slurm/slurm.conf <<CONF
# Written by crisp's dev/up.sh: a two-node cluster on this machine.
ClusterName=crisp-dev
SlurmctldHost=$node($NODE1_IP)
AuthType=auth/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=$RUN/slurmctld.pid
SlurmdPidFile=/var/spool/slurmd/slurmd.pid
SlurmctldLogFile=$LOGS/slurmctld.log
SlurmdLogFile=$LOGS/slurmd-%n.log
SlurmdDebug=info
# As production GPU sites run it: each job and step in cgroups of its own, with
# its cores, memory and devices constrained (cgroup.conf); Slurm kills by cgroup.
ProctrackType=proctrack/cgroup
TaskPlugin=task/cgroup,task/affinity
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
# More CPUs than the machine has, so tests and benchmarks can run many steps at once.
SlurmdParameters=config_overrides
PlugStackConfig=/etc/slurm/plugstack.conf
# The prolog (crisp's starts pulling the job's image) runs on every node at allocation,
# not when the node's first step arrives.
PrologFlags=Alloc
# Four fake GPUs on this node (dev/fake_gpus.sh).
GresTypes=gpu
NodeName=$node NodeAddr=$NODE1_IP CPUs=32 RealMemory=8000 Gres=gpu:4 State=UNKNOWN
NodeName=$NODE2 NodeAddr=$NODE2_IP CPUs=32 RealMemory=8000 State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
PartitionName=multi Nodes=$node,$NODE2 MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
cat >/etc/slurm/cgroup.conf <<CONF
CgroupPlugin=cgroup/v1
ConstrainCores=yes
ConstrainRAMSpace=yes
ConstrainDevices=yes
CONF
# Slurm reads its plugins' choice at start only: restart it when that changed.
if [[ $(slurm_conf_sum) != "$conf_before" ]]; then
  [[ -f /var/spool/slurmd/slurmd.pid ]] && kill "$(cat /var/spool/slurmd/slurmd.pid)" 2>/dev/null
  node2_stop_slurmd
  stop_daemon "$RUN/slurmctld.pid"
  wait_for "slurmd to stop" 15 bash -c '! pgrep -x slurmd'
fi
echo "include /etc/slurm/plugstack.conf.d/*.conf" >/etc/slurm/plugstack.conf
echo "required $SLURM_PLUGINDIR/spank_crisp.so socket=$CRISPD_SOCK" >/etc/slurm/plugstack.conf.d/crisp.conf
if [[ ! -f $RUN/slurmctld.pid ]] || ! kill -0 "$(cat "$RUN/slurmctld.pid")" 2>/dev/null; then
  /usr/sbin/slurmctld -i
fi
fresh_slurmd=0
if [[ ! -f /var/spool/slurmd/slurmd.pid ]] || ! kill -0 "$(cat /var/spool/slurmd/slurmd.pid)" 2>/dev/null; then
  /usr/sbin/slurmd -N "$node"
  fresh_slurmd=1
fi
node2_start_slurmd && fresh_slurmd=1
wait_for slurmctld 30 scontrol ping
for n in "$node" "$NODE2"; do
  wait_for "node $n" 30 bash -c "sinfo -h -n $n -N -o %T | grep -qE '^(idle|mixed|allocated)'"
done
# Jobs slurmctld still counts as running on a node whose slurmd just started died with the old one.
((fresh_slurmd)) && scancel --state=RUNNING 2>/dev/null

say "the local cluster is up: sinfo, srun, crispctl ps; dev/down.sh stops it"
if ((demo)); then
  say "srun --container-image=$TEST_IMAGE cat /etc/os-release"
  cd /tmp && srun --container-image="$TEST_IMAGE" cat /etc/os-release
fi
