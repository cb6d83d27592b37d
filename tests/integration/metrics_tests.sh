# crispd's Prometheus metrics, read by a real Prometheus server (Debian's) scraping
# both dev nodes' crispd on loopback, with the site examples (conf-examples/prometheus)
# checked by promtool and their queries run against it; crispctl's --json.
# Sourced by run.sh.

PROM_ADDR=127.0.0.1:9490
PROM_EXAMPLES=$CRISP_SRC/conf-examples/prometheus

# start_prometheus: a server scraping both nodes every second, with the example alert rules
# loaded; PROM_PID and PROM_DIR. Debian's own configuration and data are not touched.
start_prometheus() {
  PROM_DIR=$(mktemp -d /tmp/crisp-prom.XXXXXX)
  cat >"$PROM_DIR/prometheus.yml" <<EOF
global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: ["$PROM_EXAMPLES/crisp-alerts.yml"]
scrape_configs:
  - job_name: crispd
    static_configs:
      - targets: ["$CRISPD_METRICS"]
        labels: {node: "$(hostname -s)"}
      - targets: ["$NODE2_CRISPD_METRICS"]
        labels: {node: "$NODE2"}
EOF
  prometheus --config.file="$PROM_DIR/prometheus.yml" --storage.tsdb.path="$PROM_DIR/data" \
    --web.listen-address="$PROM_ADDR" >"$LOGS/prometheus.log" 2>&1 &
  PROM_PID=$!
  wait_until 30 both_targets_up
}
stop_prometheus() { kill "$PROM_PID" 2>/dev/null; wait "$PROM_PID" 2>/dev/null; rm -rf "$PROM_DIR"; }

# prom QUERY: Prometheus's HTTP API answer (JSON) to an instant query.
prom() { curl -sf --get "http://$PROM_ADDR/api/v1/query" --data-urlencode "query=$1"; }
# prom_value QUERY: the single value it gives ("none": no series, "error": not a query).
prom_value() {
  prom "$1" | python3 -c '
import json, sys
try:
    r = json.load(sys.stdin)
except ValueError:
    print("error"); sys.exit()
v = r["data"]["result"] if r.get("status") == "success" else None
print("error" if v is None else "none" if not v else "%g" % float(v[0]["value"][1]))'
}
both_targets_up() { [[ $(prom_value 'sum(up{job="crispd"})') == 2 ]]; }
# A value Prometheus has scraped since now: two scrape intervals on.
fresh() { sleep 2.5; }

test_prometheus_sees_setups_and_failures() {
  local n1; n1=$(hostname -s)
  start_prometheus || { expect "Prometheus scrapes both nodes' crispd" false; stop_prometheus; return; }
  settle
  fresh
  local q_setups="sum by (node) (crisp_setup_seconds_count{node=\"NODE\"})"
  local q_fail="crisp_setup_failures_total{node=\"$n1\",phase=\"PHASE\"}"
  local s1 s2 f_image f_paths p_missing
  s1=$(prom_value "${q_setups/NODE/$n1}") s2=$(prom_value "${q_setups/NODE/$NODE2}")
  f_image=$(prom_value "${q_fail/PHASE/image}") f_paths=$(prom_value "${q_fail/PHASE/paths}")
  p_missing=$(prom_value "sum(crisp_pull_failures_total{node=\"$n1\",reason=\"not_found\"}) or vector(0)")
  expect "the failure counters are there at 0 or more before any failure" equals "${f_image//[0-9]/}${f_paths//[0-9]/}" ""
  local q_refused="crisp_requests_refused_total{node=\"$n1\",reason=\"not_root\"}" r0
  r0=$(prom_value "$q_refused")

  # Three steps made (one on each node, then one on node 1) and two that fail on node 1:
  # a tag that does not exist (the image phase), a mount source the user may not reach (paths).
  run as_user "${SRUN[@]}" -p multi -N2 --container-image="$TEST_IMAGE" true
  expect "the two-node step ran" equals "$RC" 0
  run as_user "${SRUN[@]}" -w "$n1" --container-image="$TEST_IMAGE" true
  expect "the one-node step ran" equals "$RC" 0
  run as_user "${SRUN[@]}" -w "$n1" --container-image="$REGISTRY/crisp-test/busybox:no-such-tag-$RANDOM" true
  expect "the missing tag failed" equals "$RC" 1
  run as_user "${SRUN[@]}" -w "$n1" --container-image="$TEST_IMAGE" --container-mounts=/var/tmp/crisp-it/secret/file:/s true
  expect "the unreachable mount failed" equals "$RC" 1
  run as_user "${CRISPCTL[@]}" pull "$TEST_IMAGE"
  expect "a user's pull is refused" contains "$ERR" "reserved to root"
  fresh

  expect "node 1's setup histogram counted its 2 setups" equals "$(prom_value "${q_setups/NODE/$n1}")" "$((s1 + 2))"
  expect "node 2's counted its 1" equals "$(prom_value "${q_setups/NODE/$NODE2}")" "$((s2 + 1))"
  expect "the missing tag: one failure in the image phase" equals "$(prom_value "${q_fail/PHASE/image}")" "$((f_image + 1))"
  expect "the unreachable mount: one in the paths phase" equals "$(prom_value "${q_fail/PHASE/paths}")" "$((f_paths + 1))"
  expect "the user's refused pull is counted as not_root" equals "$(prom_value "$q_refused")" "$((r0 + 1))"
  local p_now; p_now=$(prom_value "sum(crisp_pull_failures_total{node=\"$n1\",reason=\"not_found\"})")
  expect "the missing tag's pulls counted as not_found ($p_missing -> $p_now)" test "$p_now" -gt "$p_missing"
  local p90; p90=$(prom_value "histogram_quantile(0.9, sum by (le) (crisp_setup_seconds_bucket{node=\"$n1\"}))")
  expect "a p90 of node 1's setup time ($p90 s) under a minute" python3 -c "import sys; sys.exit(not 0 < $p90 < 60)"
  expect "the phases of setups are there" test "$(prom_value "count(crisp_setup_phase_seconds_count{node=\"$n1\",phase=\"image\"})")" -ge 1
  expect "crispd's memory is read" test "$(prom_value "process_resident_memory_bytes{node=\"$NODE2\"}")" != none
  local age; age=$(prom_value "crisp_containerd_last_answer_age_seconds{node=\"$n1\"}")
  expect "containerd answered node 1's crispd lately ($age s)" python3 -c "import sys; sys.exit(not 0 <= $age < 30)"
  expect "the example alert rules are loaded and healthy" equals \
    "$(curl -sf "http://$PROM_ADDR/api/v1/rules" | python3 -c '
import json, sys
rules = [r for g in json.load(sys.stdin)["data"]["groups"] for r in g["rules"]]
print(len(rules), all(r["health"] == "ok" for r in rules))')" "3 True"
  stop_prometheus
}

# The dashboard's and the alerts' queries, run on the real server: each is PromQL it takes,
# and each names series crispd serves.
test_example_dashboard_and_alerts_query_what_crispd_serves() {
  start_prometheus || { expect "Prometheus scrapes both nodes' crispd" false; stop_prometheus; return; }
  run as_user "${SRUN[@]}" -p multi -N2 --container-image="$TEST_IMAGE" true
  fresh
  local q bad=() empty=()
  while IFS= read -r q; do
    q=${q//\$node/.*}
    q=${q//\$__rate_interval/1m}
    case $(prom_value "$q") in
      error) bad+=("$q") ;;
      none) # a comparison filters; its left side must still have data
        [[ $q == *" > "* || $q == *" >= "* ]] && q=${q%% >*}
        [[ $(prom_value "$q") == none ]] && empty+=("$q") ;;
    esac
  done < <(curl -sf "http://$PROM_ADDR/api/v1/rules" | python3 -c '
import json, sys
# The alert rules as the server loaded them, and the dashboard panels queries.
for g in json.load(sys.stdin)["data"]["groups"]:
    for r in g["rules"]:
        print(" ".join(r["query"].split()))
for p in json.load(open(sys.argv[1]))["panels"]:
    for t in p["targets"]:
        print(t["expr"])' "$PROM_EXAMPLES/grafana-dashboard.json")
  expect "every query parses: ${bad[*]}" equals "${#bad[@]}" 0
  expect "every query finds series crispd serves: ${empty[*]}" equals "${#empty[@]}" 0
  run promtool check config "$PROM_EXAMPLES/prometheus.yml"
  expect "promtool check config passes" equals "$RC" 0
  run promtool check rules "$PROM_EXAMPLES/crisp-alerts.yml"
  expect "promtool check rules passes" equals "$RC" 0
  run bash -c "cd '$PROM_EXAMPLES' && promtool test rules crisp-alerts.test.yml"
  expect "the alerts fire on the series that should raise them (promtool test rules)" equals "$RC" 0
  stop_prometheus
}

# What any local user reads on the metrics port: counts, no user, job or image. A user who
# holds the port's connections open stalls the metrics (as with any TCP exporter: the admin
# guide's firewall rule keeps users off the port), never a step nor crispd's socket.
test_metrics_show_no_user_and_stall_no_step() {
  local job text
  as_user "${SRUN[@]}" -J metrics-hold --container-image="$TEST_IMAGE" sleep 30 &
  local step=$!
  job=$(running_job metrics-hold)
  text=$(as_user curl -sf "http://$CRISPD_METRICS/metrics")
  expect "a user reads the metrics" contains "$text" "crisp_setup_seconds_bucket"
  expect "no user name in them" lacks "$text" "$TEST_USER"
  expect "no image in them" lacks "$text" "crisp-test"
  expect "no job id in them" lacks "$text" "\"$job\""
  # 64 connections that never send a request, held by the test user for 10 s.
  as_user python3 -c '
import socket, sys, time
host, port = sys.argv[1].rsplit(":", 1)
held = [socket.create_connection((host, int(port))) for _ in range(64)]
time.sleep(10)' "$CRISPD_METRICS" &
  local holder=$!
  sleep 1
  run curl -sf -o /dev/null --max-time 2 "http://$CRISPD_METRICS/metrics"
  expect "the held port does stall the metrics (else this test tests nothing)" test "$RC" -ne 0
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" echo still-starting
  expect "a step starts while the port is held" equals "$OUT" still-starting
  expect "crispd answers on its socket while the port is held" test -n "$(stat_of steps_created)"
  wait "$holder"
  wait_until 10 curl -sf -o /dev/null --max-time 2 "http://$CRISPD_METRICS/metrics"
  expect "the metrics are served again once the user lets go" equals "$?" 0
  # Not a bare wait: a crispd an earlier test restarted is this shell's child too.
  scancel "$job" 2>/dev/null; wait "$step"
}

relay_pid() { pgrep -f "^$PREFIX/libexec/crisp/crisp-metrics-relay $CRISPD_METRICS\$"; }
# The HTTP parser a user reaches is not root's: crisp-metrics-relay runs as nobody, without
# capabilities; what a user sends it harms neither crispd nor the relay for long.
test_metrics_http_server_is_nobodys() {
  local pid status
  pid=$(relay_pid)
  status=$(cat "/proc/$pid/status" 2>/dev/null)
  expect "one relay for node 1's crispd (pid '$pid')" test -n "$pid"
  expect "it runs as nobody" contains "$status" $'Uid:\t65534\t65534\t65534\t65534'
  expect "with no capability" contains "$status" $'CapEff:\t0000000000000000'
  expect "and no new privileges" contains "$status" $'NoNewPrivs:\t1'
  run as_user kill -9 "$pid"
  expect "the test user cannot signal it" equals "$RC" 1
  # Garbage, an oversized request, a half request: answered or cut, nothing else.
  as_user python3 -c '
import os, socket, sys
host, port = sys.argv[1].rsplit(":", 1)
for payload in (os.urandom(65536), b"GET /metrics HTTP/1.1\r\nX: " + b"a" * 100000 + b"\r\n\r\n", b"GET /metr"):
    try:
        s = socket.create_connection((host, int(port)), timeout=3)
        s.sendall(payload)
        s.recv(100)
    except OSError:
        pass' "$CRISPD_METRICS"
  wait_until 10 curl -sf -o /dev/null --max-time 2 "http://$CRISPD_METRICS/metrics"
  expect "metrics are served after the garbage" equals "$?" 0
  kill -9 "$(relay_pid)"
  wait_until 10 curl -sf -o /dev/null --max-time 2 "http://$CRISPD_METRICS/metrics"
  expect "a relay that dies is started again by crispd" equals "$?" 0
  expect "a new relay" test "$(relay_pid)" != "$pid"
  run as_user "${SRUN[@]}" --container-image="$TEST_IMAGE" echo after
  expect "crispd went on serving steps throughout" equals "$OUT" after
}

test_crispctl_json_for_scripts() {
  as_user "${SRUN[@]}" -J json-ps --container-image="$TEST_IMAGE" sleep 20 &
  local step=$! job
  job=$(running_job json-ps)
  run "${CRISPCTL[@]}" ps --json --job "$job"
  expect "ps --json: the job's step, whole ids" equals "$(python3 -c '
import json, sys
steps = json.loads(sys.argv[1])
print(len(steps), steps[0]["job_id"], steps[0]["step"], steps[0]["uid"], len(steps[0]["container_id"]), steps[0]["state"])' "$OUT")" \
    "1 $job 0 $(id -u "$TEST_USER") 64 CONTAINER_RUNNING"
  run as_user "${CRISPCTL[@]}" ps --json
  expect "a user's ps --json is JSON of their own" equals "$(python3 -c '
import json, sys
print(all(s["uid"] == int(sys.argv[2]) for s in json.loads(sys.argv[1])))' "$OUT" "$(id -u "$TEST_USER")")" True
  local text json
  text=$("${CRISPCTL[@]}" stats) json=$("${CRISPCTL[@]}" stats --json)
  expect "stats --json has every counter the text shows, with its value" equals "$(python3 -c '
import json, sys
j = json.loads(sys.argv[1])
t = dict(l.split() for l in sys.argv[2].splitlines())
# Counters steps and spares move on their own between the two calls.
print(sorted(j) == sorted(t) and all(str(j[k]) == t[k] for k in t if not k.startswith(("steps_", "spares_"))))' "$json" "$text")" True
  scancel "$job" 2>/dev/null; wait "$step"
}
