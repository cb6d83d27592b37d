#!/bin/bash
# Soak: many containerized steps of mixed kinds on the dev cluster (brought up
# if it is not), then what is left on each node: containers, sandboxes beyond
# the kept per-user ones, host mounts and their directories, CRI logs, and
# crispd's descriptors and memory before and after. Prints a markdown table
# (met / **no**) and writes bench/results/soak.md.
#   bench/soak.sh [--steps N]     (default 1000, in jobs of 50 steps, 4 at a time)
source "$(dirname "$0")/../dev/lib.sh"
need_root
steps=1000
[[ ${1:-} == --steps ]] && steps=$2
per_job=50 jobs=$(((steps + per_job - 1) / per_job))
if ! sinfo -h >/dev/null 2>&1 || ! "$PREFIX/bin/crispctl" --socket "$CRISPD_SOCK" stats >/dev/null 2>&1; then
  "$CRISP_SRC/dev/up.sh" --no-demo
fi

# node_run NODE CMD...: CMD where NODE's containerd and crispd live.
node_run() { if [[ $1 == "$NODE2" ]]; then shift; in_node2 "$@"; else shift; "$@"; fi; }
crispd_pid_of() { if [[ $1 == "$NODE2" ]]; then cat "$RUN/crispd-n2.pid"; else cat "$RUN/crispd.pid"; fi; }
fds_of() { ls "/proc/$(crispd_pid_of "$1")/fd" | wc -l; }
rss_kib_of() { awk '/^VmRSS/ {print $2}' "/proc/$(crispd_pid_of "$1")/status"; }
nodes=("$(hostname -s)" "$NODE2")
declare -A fds_before rss_before
for n in "${nodes[@]}"; do fds_before[$n]=$(fds_of "$n") rss_before[$n]=$(rss_kib_of "$n"); done

# One job: per_job steps, each of a kind picked by its number.
script=$(mktemp /tmp/crisp-soak-XXXXXX.sh)
chmod 755 "$script"
cat >"$script" <<EOF
#!/bin/bash
img=$TEST_IMAGE
for i in \$(seq $per_job); do
  case \$((i % 10)) in
    0|5) srun --container-name=soak --container-image=\$img true ;;
    1) srun -n2 --container-image=\$img sh -c 'echo \$SLURM_PROCID' ;;
    2) srun --container-image=\$img false ;;
    3) timeout 1 srun --container-image=\$img sleep 30 ;;
    4) srun --container-image=\$img --container-mounts=tmpfs:/scratch sh -c 'echo x >/scratch/f' ;;
    6) srun --gres=gpu:1 --container-image=\$img sh -c 'ls /dev/nvidia0 /dev/nvidia1 2>/dev/null | wc -l' ;;
    7) srun --container-image=\$img --container-entrypoint true ;;
    *) srun --container-image=\$img true ;;
  esac
done
EOF
say "soak: $steps steps in $jobs jobs of $per_job"
t0=$SECONDS
ids=()
for j in $(seq "$jobs"); do
  ids+=("$(cd /tmp && runuser -u "$TEST_USER" -- sbatch --parsable -N1 -n2 --gres=gpu:1 -o /dev/null -J "soak-$j" "$script")")
done
for id in "${ids[@]}"; do
  while [[ -n $(squeue -h -j "$id" 2>/dev/null) ]]; do sleep 2; done
done
rm -f "$script"
# Named containers outlive their jobs (Pyxis's global scope): their user removes them.
for n in "${nodes[@]}"; do
  node_run "$n" runuser -u "$TEST_USER" -- "$PREFIX/bin/crispctl" --socket "$CRISPD_SOCK" rm soak >/dev/null 2>&1 || true
done
# The epilogs' releases and a sweep (5 s on the dev cluster) finish what the jobs left.
sleep 15
secs=$((SECONDS - t0))

# count_left NODE: "containers sandboxes mounts dirs logs" left on NODE.
count_left() {
  local n=$1
  local ctrs sbs mounts dirs logs
  ctrs=$(node_run "$n" ctr --address "$CONTAINERD_SOCK" -n k8s.io containers ls -q 'labels."crisp.slurm/managed"==true,labels."io.cri-containerd.kind"==container' | wc -l)
  sbs=$(node_run "$n" ctr --address "$CONTAINERD_SOCK" -n k8s.io containers ls -q 'labels."io.cri-containerd.kind"==sandbox' | wc -l)
  mounts=$(node_run "$n" grep -c -e " /run/crisp/tmpfs" -e " /run/crisp/tmpfs-hca" /proc/self/mountinfo || true)
  dirs=$(node_run "$n" sh -c 'find /run/crisp/tmpfs /run/crisp/tmpfs-hca -mindepth 1 -maxdepth 1 2>/dev/null | wc -l')
  logs=$(node_run "$n" sh -c 'ls -A /run/crisp/logs 2>/dev/null | wc -l')
  echo "$ctrs $sbs $mounts $dirs $logs"
}
met() { if [[ $1 == 1 ]]; then echo met; else echo '**no**'; fi; }
out=$CRISP_SRC/bench/results/soak.md
mkdir -p "$(dirname "$out")"
{
  echo "Soak on $(date -u +%F): $steps steps ($jobs jobs of $per_job, mixed kinds) in ${secs} s; what is left once they end:"
  echo
  echo "| node | containers | sandboxes (kept: 1 per user) | crisp mounts | mount dirs | CRI logs | crispd fds before / after | crispd RSS KiB before / after |"
  echo "|---|---|---|---|---|---|---|---|"
  for n in "${nodes[@]}"; do
    read -r c s m d l < <(count_left "$n")
    echo "| $n | $c $(met $((c == 0))) | $s $(met $((s <= 1))) | $m $(met $((m == 0))) | $d $(met $((d == 0))) | $l $(met $((l == 0))) |" \
      "${fds_before[$n]} / $(fds_of "$n") $(met $(($(fds_of "$n") <= ${fds_before[$n]}))) |" \
      "${rss_before[$n]} / $(rss_kib_of "$n") |"
  done
} | tee "$out"
