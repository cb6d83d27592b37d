#!/bin/bash
# bench/metrics.sh [ROUNDS]: what crispd's metrics cost, on the dev cluster's first node.
# Rounds alternate crispd with metrics (the default) and with --no-metrics; each runs 10
# containerized jobs and reads crispd's own setup time of each from its log. Then a scrape
# through the relay, 50 times. Prints a markdown table (met / **no**) and writes it to
# bench/results/metrics.md; the cluster is left with metrics on.
source "$(dirname "$0")/../dev/lib.sh"
need_root
ROUNDS=${1:-3}
N1=$(hostname -s)
OUT=$CRISP_SRC/bench/results/metrics.md
SAMPLES=$(mktemp)
trap 'rm -f "$SAMPLES"; CRISPD_ARGS=${SAVED_ARGS:-} start_crispd >/dev/null 2>&1' EXIT
SAVED_ARGS=$CRISPD_ARGS
BASE_ARGS="--sweep-interval 5 --pull-stall-timeout 20 --spares ${CRISP_SPARES:-8} $FAKE_GPU_CRISPD_ARGS"

# one_round on|off: 10 jobs on node 1, each a step in the busybox image; their setup ms.
one_round() {
  local args=$BASE_ARGS
  [[ $1 == off ]] && args="$args --no-metrics"
  CRISPD_ARGS=$args start_crispd >/dev/null
  runuser -u "$TEST_USER" -- bash -c "cd /tmp && srun -w $N1 --container-image=$TEST_IMAGE true" >/dev/null 2>&1  # warm
  local from; from=$(wc -l <"$LOGS/crispd.log")
  for _ in $(seq 10); do
    runuser -u "$TEST_USER" -- bash -c "cd /tmp && srun -w $N1 --container-image=$TEST_IMAGE true" >/dev/null 2>&1
  done
  # "claimed spare container …" and "created container …", each with its time.
  tail -n +"$((from + 1))" "$LOGS/crispd.log" |
    sed -n -e "s/.*claimed spare container .* in \([0-9]*\) ms.*/$1 claim \1/p" \
      -e "s/.*created container .* in \([0-9]*\) ms.*/$1 new \1/p" >>"$SAMPLES"
  echo "$1 rss $(awk '/VmRSS/ {print $2}' "/proc/$(cat "$RUN/crispd.pid")/status")" >>"$SAMPLES"
}

for _ in $(seq "$ROUNDS"); do one_round on; one_round off; done
CRISPD_ARGS=$BASE_ARGS start_crispd >/dev/null
wait_for "the metrics relay" 10 curl -sf -o /dev/null "http://$CRISPD_METRICS/metrics"
for _ in $(seq 50); do
  echo "scrape $(curl -s -o /dev/null -w '%{time_total} %{size_download}' "http://$CRISPD_METRICS/metrics")" >>"$SAMPLES"
done
relay=$(pgrep -f "^$PREFIX/libexec/crisp/crisp-metrics-relay $CRISPD_METRICS\$")
echo "relay rss $(awk '/VmRSS/ {print $2}' "/proc/$relay/status")" >>"$SAMPLES"

python3 - "$SAMPLES" "$ROUNDS" >"$OUT" <<'PY'
import statistics as st, sys
rows = [l.split() for l in open(sys.argv[1])]
def vals(kind, what):
    return [float(r[2]) for r in rows if r[0] == kind and r[1] == what]
on, off = vals("on", "claim"), vals("off", "claim")
new_on, new_off = vals("on", "new"), vals("off", "new")
rss_on, rss_off = max(vals("on", "rss")) / 1024, max(vals("off", "rss")) / 1024
relay = vals("relay", "rss")[0] / 1024
scrapes = sorted(float(r[1]) * 1000 for r in rows if r[0] == "scrape")
size = [float(r[2]) for r in rows if r[0] == "scrape"][-1]
p = lambda xs, q: sorted(xs)[min(len(xs) - 1, int(q * len(xs)))]
yes = lambda ok: "met" if ok else "**no**"
d = st.median(on) - st.median(off)
print(f"crispd's metrics on the dev cluster's first node ({sys.argv[2]} rounds each way; setups as crispd logs them)\n")
print("| measure | metrics on | metrics off (`--no-metrics`) | target | |")
print("|---|---:|---:|---|---|")
print(f"| a spare claimed, p50 (ms; {len(on)} and {len(off)}) | {st.median(on):.1f} | {st.median(off):.1f} | on ≤ off + 1 ms | {yes(d <= 1)} |")
if new_on and new_off:
    print(f"| a container made, p50 (ms; {len(new_on)} and {len(new_off)}) | {st.median(new_on):.1f} | {st.median(new_off):.1f} | | |")
print(f"| crispd's resident memory, most seen (MB) | {rss_on:.1f} | {rss_off:.1f} | on ≤ off + 3 MB | {yes(rss_on <= rss_off + 3)} |")
print(f"| crisp-metrics-relay's resident memory (MB) | {relay:.1f} | – | ≤ 10 MB | {yes(relay <= 10)} |")
print(f"| a scrape through the relay, p50 / p90 (ms, 50) | {p(scrapes, .5):.1f} / {p(scrapes, .9):.1f} | – | p90 ≤ 50 ms | {yes(p(scrapes, .9) <= 50)} |")
print(f"| the text served (kB) | {size / 1000:.0f} | – | | |")
PY
cat "$OUT"
