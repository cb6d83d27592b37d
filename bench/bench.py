#!/usr/bin/python3
"""bench/'s measurements, run by bench/run.sh on the dev cluster: one run, every variant
interleaved round by round so the machine's noise falls on all alike. Targets are reported,
never asserted."""
import argparse
import csv
import json
import os
import random
import re
import statistics
import subprocess
import tempfile
import threading
import time
import urllib.request

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the file backend)

P = argparse.ArgumentParser()
for flag in ("--out", "--registry", "--user", "--containerd", "--crispd-pidfile", "--bundle", "--host-compute", "--crispctl",
             "--sqsh-small", "--sqsh-large", "--restart-crispd"):
    P.add_argument(flag, required=True)
P.add_argument("--crispd-log", action="append", required=True, help="crispd's logs, for its phase lines")
P.add_argument("--crispd-metrics", action="append", required=True, help="each node's crispd metrics address (host:port)")
P.add_argument("--spares", type=int, default=8, help="crispd's --spares in the spares-on runs")
P.add_argument("--runs", type=int, default=20)
P.add_argument("--cold-runs", type=int, default=3)
P.add_argument("--compute-runs", type=int, default=9)
P.add_argument("--burst-rounds", type=int, default=3, help="rounds of the concurrency curve")
P.add_argument("--burst-spares", type=int, default=32, help="crispd's --spares and --spares-per-user in the bursts")
P.add_argument("--save-runs", type=int, default=2)
A = P.parse_args()

SMALL = f"{A.registry}/crisp-bench/small:1"
LARGE = f"{A.registry}/crisp-bench/large:1"
CTR = ["ctr", "--address", A.containerd]
WORK = tempfile.mkdtemp(prefix="crisp-bench-")
os.chmod(WORK, 0o777)
samples = []  # (section, variant, value, unit)
SETTLE_S = 0.3


def run(cmd, as_user=True):
    """Runs cmd (as the test user unless told), returns (ms, stdout); a failure ends the bench."""
    full = (["runuser", "-u", A.user, "--"] if as_user else []) + cmd
    t0 = time.perf_counter()
    p = subprocess.run(full, cwd=WORK, capture_output=True, text=True)
    ms = (time.perf_counter() - t0) * 1000
    if p.returncode != 0:
        raise SystemExit(f"bench: {' '.join(cmd)} failed ({p.returncode}): {p.stderr.strip()[-400:]}")
    return ms, p.stdout


def pct(xs, q):
    """Nearest-rank percentile."""
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, int(round(q / 100 * len(s) + 0.5)) - 1))]


def rss_mb():
    with open(A.crispd_pidfile) as p, open(f"/proc/{p.read().strip()}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise SystemExit("bench: crispd's VmRSS not found")


def interleave(variants, rounds, warmup, section, unit="ms", value=None):
    """Runs each variant once per round, in an order shuffled each round, with a pause before each
    launch so that none pays for the cleanup of the one before (a job's epilog, a container's
    removal); returns {name: [values]} without the warm-up rounds."""
    out = {name: [] for name, _, _ in variants}
    for r in range(warmup + rounds):
        for name, cmd, as_user in random.Random(r).sample(variants, len(variants)):
            time.sleep(SETTLE_S)
            ms, stdout = run(cmd(r) if callable(cmd) else cmd, as_user)
            v = value(stdout) if value else ms
            if r >= warmup:
                out[name].append(v)
                samples.append((section, name, round(v, 3), unit))
    return out


def allocation():
    """A job to run steps in: salloc --no-shell returns once it is granted."""
    p = subprocess.run(["runuser", "-u", A.user, "--", "salloc", "--no-shell", "-p", "debug", "-J", "crisp-bench"],
                       cwd=WORK, capture_output=True, text=True)
    for word in p.stderr.split():
        if word.isdigit():
            return word
    raise SystemExit(f"bench: salloc failed: {p.stderr.strip()}")


def srun(*args):
    return ["srun", "-p", "debug", *args]


# 1 and 2: launch latency of /bin/true, new jobs and steps of one job, both images cached.
job = allocation()
launch = interleave([
    ("bare srun", srun("/bin/true"), True),
    ("crisp, new job (5 MB image)", srun(f"--container-image={SMALL}", "/bin/true"), True),
    ("crisp, new job (560 MB image)", srun(f"--container-image={LARGE}", "/bin/true"), True),
    ("crisp, new job (5 MB squashfs)", srun(f"--container-image={A.sqsh_small}", "/bin/true"), True),
    ("crisp, new job (2 GB squashfs)", srun(f"--container-image={A.sqsh_large}", "/bin/true"), True),
    ("Slurm --container (oci.conf, runc)", srun(f"--container={A.bundle}", "/bin/true"), True),
    ("srun ctr run --rm", lambda r: srun(*CTR, "-n", "crisp-bench", "run", "--rm", SMALL, f"crisp-bench-{os.getpid()}-{r}",
                                         "/bin/true"), False),
    ("bare step in a job", ["srun", "--jobid", job, "--overlap", "/bin/true"], True),
    ("crisp, next step (named container)", ["srun", "--jobid", job, "--overlap", "--container-name=bench",
                                            f"--container-image={SMALL}", "/bin/true"], True),
    ("crisp, next step (unnamed)", ["srun", "--jobid", job, "--overlap", f"--container-image={SMALL}", "/bin/true"], True),
], A.runs, 2, "launch")

# 1c: spares off and on side by side: the cluster's crispds restarted with --spares 0, then with
# spares, each time new jobs and unnamed steps interleaved with their bare and Slurm counterparts.
PHASE = re.compile(r"(created|claimed spare) container \S+ for job \d+ step \S+ \(.*\) in \d+ ms \((.*)\)$")


def phase_log(offsets):
    """crispd's phase times since offsets, median ms per phase, for containers made and spares claimed."""
    times = {}
    for path, start in offsets.items():
        with open(path, errors="replace") as f:
            f.seek(start)
            for line in f:
                m = PHASE.search(line.strip())
                if m:
                    for part in m.group(2).split(", "):
                        name, ms = part.rsplit(" ", 1)
                        times.setdefault(m.group(1), {}).setdefault(name, []).append(int(ms))
    return {kind: ", ".join(f"{n} {statistics.median(v):.0f}" for n, v in phases.items()) + f" ({len(next(iter(phases.values())))}×)"
            for kind, phases in times.items()}


def spares_phase(n):
    subprocess.run(A.restart_crispd.split() + [str(n)], check=True, capture_output=True)
    offsets = {p: os.path.getsize(p) for p in A.crispd_log}
    alloc = allocation()
    out = interleave([
        ("bare srun", srun("/bin/true"), True),
        ("Slurm --container (oci.conf, runc)", srun(f"--container={A.bundle}", "/bin/true"), True),
        ("crisp, new job", srun(f"--container-image={SMALL}", "/bin/true"), True),
        ("bare step in a job", ["srun", "--jobid", alloc, "--overlap", "/bin/true"], True),
        ("crisp, unnamed step", ["srun", "--jobid", alloc, "--overlap", f"--container-image={SMALL}", "/bin/true"], True),
    ], A.runs, 2, f"spares-{n}")
    subprocess.run(["scancel", alloc], check=True)
    time.sleep(2)
    return out, phase_log(offsets), rss_mb()


def spare_memory_mb():
    """What one ready spare holds: its container's cgroup (holder, page cache) on this node."""
    ids = [line.split()[3] for line in run(A.crispctl.split() + ["ps"], False)[1].splitlines()[1:]
           if line.split()[1] == "spare"]
    tasks = run(CTR + ["-n", "k8s.io", "tasks", "ls"], False)[1].splitlines()[1:]
    pids = [t.split()[1] for t in tasks if any(t.startswith(i) for i in ids)]
    if not pids:
        return None
    with open(f"/proc/{pids[0]}/cgroup") as f:
        lines = [line.strip().split(":", 2) for line in f]
    # cgroup v1's memory hierarchy where there is one (this VM's), else v2's unified one.
    for _, controllers, path in lines:
        if "memory" in controllers.split(","):
            with open(f"/sys/fs/cgroup/memory{path}/memory.usage_in_bytes") as f:
                return int(f.read()) / 2**20
    with open(f"/sys/fs/cgroup{lines[0][2]}/memory.current") as f:
        return int(f.read()) / 2**20


spares = {"off": spares_phase(0)}
spares["on"] = spares_phase(A.spares)
spare_mb = spare_memory_mb()


# 4: compute inside against bare, the same static binary. Each kernel starts a second after its
# task, in both variants: a job computes long after its launch, whose own work (containerd's
# bookkeeping of a start, on a 2-core node) would otherwise share the first runs' memory bandwidth.
def kernel(binary, kind):
    return ["sh", "-c", f"sleep 1 && exec {binary} {kind}"]


compute = {}
for kind, unit in (("cpu", "Mops/s"), ("mem", "GB/s")):
    compute[kind] = interleave([
        ("bare", srun(*kernel(A.host_compute, kind)), True),
        ("crisp", srun(f"--container-image={SMALL}", *kernel("/usr/local/bin/crisp-compute", kind)), True),
    ], A.compute_runs, 1, f"compute-{kind}", unit, lambda s: float(s.strip()))

# 5 and 6: steps started at once (a sweep of `srun ... &`): 1, 8 and 32 unnamed steps of one job, and
# 8 new jobs, bare and crisp interleaved burst by burst; crispd's memory sampled meanwhile. A site
# whose jobs start 32 steps at once lets a user keep as many spares.
subprocess.run(A.restart_crispd.split() + [str(A.burst_spares)] * 2, check=True, capture_output=True)
time.sleep(2)
idle_rss = rss_mb()
peak = [idle_rss]
failed = []
waited = [0.0]  # the longest wait for the spares before a burst


def launch(argv):
    """argv as the test user; its wall time in ms. A failure is counted (a target row), not fatal."""
    t0 = time.perf_counter()
    p = subprocess.run(["runuser", "-u", A.user, "--", *argv], cwd=WORK, capture_output=True, text=True)
    ms = (time.perf_counter() - t0) * 1000
    if p.returncode != 0:
        failed.append(p.stderr.strip())
    return ms


def burst(cmd, n):
    """n launches of cmd(i) released together; each one's wall time in ms."""
    start = threading.Barrier(n)
    results = [None] * n

    def one(i):
        start.wait()
        results[i] = launch(cmd(i))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        while t.is_alive():
            peak[0] = max(peak[0], rss_mb())
            t.join(0.01)
    return results


def one_after_another(cmd, n):
    """n launches of cmd(i), each after the last has ended (a job script's loop of srun); each one's
    wall time in ms."""
    results = []
    for i in range(n):
        results.append(launch(cmd(i)))
        peak[0] = max(peak[0], rss_mb())
    return results


def spares_making():
    """Spares the nodes' crispds are making now (their metrics' crisp_spares_making)."""
    n = 0
    for address in A.crispd_metrics:
        with urllib.request.urlopen(f"http://{address}/metrics", timeout=5) as r:
            n += sum(int(float(line.split()[1])) for line in r.read().decode().splitlines()
                     if line.startswith("crisp_spares_making "))
    return n


def settled(limit_s=60):
    """Waits, before any burst (bare or crisp), until no spare is being made: a burst then starts on a
    quiet node, as a sweep after a previous one's minutes-long steps would; seconds waited."""
    t0 = time.monotonic()
    while spares_making() and time.monotonic() - t0 < limit_s:
        time.sleep(0.2)
    return time.monotonic() - t0


LOOP = "30 steps of one job, one after another"
LOOP_IMAGE = f"{A.registry}/crisp-bench/small:loop"


def curve(rounds):
    """{(label, variant): [ms]} over every round after a first one, reported apart: an image's first
    burst finds as many spares as its steps were made at once before (one, run one after another);
    later ones as many as the burst's (within --spares-per-user). The variants' order alternates."""
    step = ["srun", "--jobid", job, "--overlap"]
    in_job = lambda i, img: [*step, *img, "/bin/true"]
    shapes = [(f"{n} step{'s' if n > 1 else ''} of one job", n, in_job, burst) for n in (1, 8, 32)]
    shapes.append(("8 new jobs", 8, lambda i, img: srun(*img, "/bin/true"), burst))
    # Its own tag of the small image: a key of its own, whose spares the bursts did not size. Its
    # rounds come after the bursts': its spares (a loop of short steps counts as a burst) take the
    # user's room from the small image's, which the next round's single step then did not find.
    subprocess.run(["skopeo", "copy", "--quiet", "--src-tls-verify=false", "--dest-tls-verify=false",
                    f"docker://{SMALL}", f"docker://{LOOP_IMAGE}"], check=True)
    in_loop = lambda i, img: [*step, *([f"--container-image={LOOP_IMAGE}"] if img else []), "/bin/true"]
    out = {}
    passes = [(r, shape) for r in range(rounds + 1) for shape in shapes]
    passes += [(r, (LOOP, 30, in_loop, one_after_another)) for r in range(rounds + 1)]
    for r, (label, n, cmd, launch_all) in passes:
        for variant, img in sorted((("bare", []), ("crisp", [f"--container-image={SMALL}"])), reverse=r % 2 == 1):
            waited[0] = max(waited[0], settled())
            time.sleep(1)
            ms = launch_all(lambda i: cmd(i, img), n)
            name = label if r else f"{label}, the image's first burst"
            out.setdefault((name, variant), []).extend(ms)
            samples.extend((f"burst: {name}", variant, round(v, 3), "ms") for v in ms)
    return out


bursts = curve(A.burst_rounds)
samples.append(("crispd-rss", "idle", round(idle_rss, 2), "MB"))
samples.append(("crispd-rss", "peak under load", round(peak[0], 2), "MB"))
# The named container outlives the job (Pyxis's global scope): its user removes it, on the job's node.
run(["srun", "--jobid", job, "--overlap", *A.crispctl.split(), "rm", "bench"])
subprocess.run(["scancel", job], check=True)

# 3b: --container-save of the 560 MB image's container, the srun's time less a launch's.
saves = []
for r in range(A.save_runs):
    out = os.path.join(WORK, f"save-{r}.sqsh")
    ms, _ = run(srun(f"--container-image={LARGE}", f"--container-save={out}", "/bin/true"))
    saves.append(ms - statistics.median(launch["crisp, new job (560 MB image)"]))
    samples.append(("save", "560 MB image's container", round(saves[-1], 3), "ms"))
    os.unlink(out)

# 3: time to first task, uncached 560 MB image; every copy of it is removed before each try.
def inspect(ref):
    return json.loads(subprocess.run(["skopeo", "inspect", "--tls-verify=false", f"docker://{ref}"],
                                     capture_output=True, text=True, check=True).stdout)


INSPECT = inspect(LARGE)
OWN_LAYERS = set(INSPECT["Layers"]) - set(inspect(SMALL)["Layers"])  # the small image's stay cached


def drop_large():
    """CRI keeps an image under three refs (tag, repo@digest, config id): all must go for GC; a
    spare container of the image would keep its layers, so the spares go first."""
    run(A.crispctl.split() + ["rm", "--spares"], False)
    left = []
    for ns in ("k8s.io", "crisp-bench"):
        listing = subprocess.run(CTR + ["-n", ns, "images", "ls"], capture_output=True, text=True, check=True).stdout
        refs = [f[0] for f in (line.split() for line in listing.splitlines()[1:]) if f[2] == INSPECT["Digest"]]
        if refs:
            subprocess.run(CTR + ["-n", ns, "images", "rm", "--sync"] + refs, capture_output=True, check=True)
        content = subprocess.run(CTR + ["-n", ns, "content", "ls", "-q"], capture_output=True, text=True).stdout
        left += [d for d in OWN_LAYERS if d in content]
    if left:
        raise SystemExit(f"bench: layers of {LARGE} are still in containerd: {left}")


def skopeo_umoci(_):
    d = tempfile.mkdtemp(prefix="crisp-bench-oci-")
    return ["sh", "-c", f"skopeo copy --quiet --src-tls-verify=false docker://{LARGE} oci:{d}/oci:1 && "
                        f"umoci unpack --image {d}/oci:1 {d}/bundle >/dev/null; rc=$?; rm -rf {d}; exit $rc"]


cold = {"ctr images pull": [], "skopeo copy + umoci unpack": [], "crisp, first task": []}
for r in range(A.cold_runs):
    for name, cmd, as_user in (
        ("ctr images pull", CTR + ["-n", "crisp-bench", "images", "pull", "--plain-http", LARGE], False),
        ("skopeo copy + umoci unpack", skopeo_umoci(r), False),
        ("crisp, first task", srun(f"--container-image={LARGE}", "/bin/true"), True),
    ):
        drop_large()
        ms, _ = run(cmd, as_user)
        cold[name].append(ms)
        samples.append(("cold", name, round(ms, 3), "ms"))

# Report.
def lat(name):
    return statistics.median(launch[name])


def son(name):
    return statistics.median(spares["on"][0][name])


def soff(name):
    return statistics.median(spares["off"][0][name])


bare, crisp_new = lat("bare srun"), lat("crisp, new job (5 MB image)")
ratio = {k: statistics.median(v["crisp"]) / statistics.median(v["bare"]) for k, v in compute.items()}
targets = [
    ("2 GB squashfs within 10 % of 5 MB squashfs (p50)",
     f"{lat('crisp, new job (2 GB squashfs)') / lat('crisp, new job (5 MB squashfs)') - 1:+.1%}",
     abs(lat("crisp, new job (2 GB squashfs)") / lat("crisp, new job (5 MB squashfs)") - 1) <= 0.10),
    ("squashfs launches within 20 ms of the registry image's (p50)",
     f"{lat('crisp, new job (5 MB squashfs)') - crisp_new:+.0f} / {lat('crisp, new job (2 GB squashfs)') - crisp_new:+.0f} ms",
     max(lat("crisp, new job (5 MB squashfs)"), lat("crisp, new job (2 GB squashfs)")) <= crisp_new + 20),
    ("crisp new job ≤ 1.6 × bare srun (p50)", f"{crisp_new / bare:.2f} ×", crisp_new <= 1.6 * bare),
    ("crisp new job below Slurm --container (p50)", f"{crisp_new:.0f} vs {lat('Slurm --container (oci.conf, runc)'):.0f} ms",
     crisp_new < lat("Slurm --container (oci.conf, runc)")),
    ("spares on: new job ≤ bare srun + 15 ms (p50)", f"{son('crisp, new job') - son('bare srun'):+.0f} ms",
     son("crisp, new job") <= son("bare srun") + 15),
    ("spares on: unnamed step ≤ bare step + 15 ms (p50)", f"{son('crisp, unnamed step') - son('bare step in a job'):+.0f} ms",
     son("crisp, unnamed step") <= son("bare step in a job") + 15),
    ("spares on: new job and unnamed step below Slurm --container (p50)",
     f"{son('crisp, new job'):.0f} / {son('crisp, unnamed step'):.0f} vs {son('Slurm --container (oci.conf, runc)'):.0f} ms",
     max(son("crisp, new job"), son("crisp, unnamed step")) < son("Slurm --container (oci.conf, runc)")),
    ("spares off: a new job (no spare to find) below Slurm --container (p50)",
     f"{soff('crisp, new job'):.0f} vs {soff('Slurm --container (oci.conf, runc)'):.0f} ms",
     soff("crisp, new job") < soff("Slurm --container (oci.conf, runc)")),
    ("next step ≤ bare step + 15 ms (p50)",
     f"+{lat('crisp, next step (named container)') - lat('bare step in a job'):.0f} ms",
     lat("crisp, next step (named container)") <= lat("bare step in a job") + 15),
    ("560 MB image within 10 % of 5 MB (p50)", f"{lat('crisp, new job (560 MB image)') / crisp_new - 1:+.1%}",
     abs(lat("crisp, new job (560 MB image)") / crisp_new - 1) <= 0.10),
    ("compute, CPU-bound ≥ 0.99 of bare", f"{ratio['cpu']:.3f}", ratio["cpu"] >= 0.99),
    ("compute, memory-bound ≥ 0.99 of bare", f"{ratio['mem']:.3f}", ratio["mem"] >= 0.99),
    ("first task, uncached ≤ 1.2 × ctr images pull",
     f"{statistics.median(cold['crisp, first task']) / statistics.median(cold['ctr images pull']):.2f} ×",
     statistics.median(cold["crisp, first task"]) <= 1.2 * statistics.median(cold["ctr images pull"])),
    ("every step of the bursts succeeds", f"{len(failed)} failed", not failed),
    ("crispd RSS ≤ 30 MB idle", f"{idle_rss:.1f} MB", idle_rss <= 30),
    ("crispd RSS ≤ 60 MB under the bursts", f"{peak[0]:.1f} MB", peak[0] <= 60),
]


def burst_ratio(label, f):
    return f(bursts[(label, "crisp")]) / f(bursts[(label, "bare")])


for label, row, p50_max, max_max in (("8 steps of one job", "8 steps of one job at once", 1.3, 1.5),
                                     ("32 steps of one job", "32 steps of one job at once", 1.3, 1.5),
                                     ("8 new jobs", "8 new jobs at once", 1.3, None), (LOOP, LOOP, 1.3, None)):
    targets.append((f"{row}: p50 ≤ {p50_max} × bare", f"{burst_ratio(label, statistics.median):.2f} ×",
                    burst_ratio(label, statistics.median) <= p50_max))
    if max_max:
        targets.append((f"{row}: max ≤ {max_max} × bare", f"{burst_ratio(label, max):.2f} ×",
                        burst_ratio(label, max) <= max_max))

lines = [f"Launch of `/bin/true` ({A.runs} runs each, interleaved), both images cached:", "",
         "| variant | p50 ms | p90 ms |", "|---|---:|---:|"]
lines += [f"| {k} | {statistics.median(v):.0f} | {pct(v, 90):.0f} |" for k, v in launch.items()]
lines += ["", f"A squashfs file's launch against Pyxis + enroot with squashfuse on a machine like this one "
          f"(1.19 s, ../shared/DESIGN.md): {1190 / lat('crisp, new job (2 GB squashfs)'):.1f} × faster (2 GB file), "
          f"{1190 / lat('crisp, new job (5 MB squashfs)'):.1f} × (5 MB). `--container-save` of the 560 MB image's "
          f"container: {statistics.median(saves) / 1000:.1f} s (srun's time less a launch, median of {A.save_runs})."]
lines += ["", f"Spare containers off and on (crispd restarted with `--spares 0`, then `--spares {A.spares}`; "
          f"{A.runs} runs each, interleaved within each half), 5 MB image cached:", "",
          "| variant | off p50 | off p90 | on p50 | on p90 |", "|---|---:|---:|---:|---:|"]
lines += [f"| {k} | {statistics.median(spares['off'][0][k]):.0f} | {pct(spares['off'][0][k], 90):.0f} | "
          f"{statistics.median(v):.0f} | {pct(v, 90):.0f} |" for k, v in spares["on"][0].items()]
lines += ["", "crispd's own phase log in each half (median ms per phase, and how many containers):", ""]
lines += [f"- spares {half}, {kind}: {text}" for half in ("off", "on") for kind, text in spares[half][1].items()]
lines += ["", f"crispd RSS after each half: {spares['off'][2]:.1f} MB off, {spares['on'][2]:.1f} MB on; one ready spare's "
          f"container holds {spare_mb:.2f} MB (its cgroup's memory.current)." if spare_mb is not None else
          "", ""]
lines += ["", f"Time to first task, 560 MB image from the local registry, its 550 MB of own layers uncached "
          f"({A.cold_runs} runs, median):", "",
          "| variant | s |", "|---|---:|"]
lines += [f"| {k} | {statistics.median(v) / 1000:.2f} |" for k, v in cold.items()]
lines += ["", f"Compute, the same static binary, started 1 s after its task ({A.compute_runs} runs, median):", "",
          "| kernel | bare | crisp | ratio |", "|---|---:|---:|---:|"]
for k, unit in (("cpu", "Mops/s"), ("mem", "GB/s")):
    lines.append(f"| {k} ({unit}) | {statistics.median(compute[k]['bare']):.1f} | "
                 f"{statistics.median(compute[k]['crisp']):.1f} | {ratio[k]:.3f} |")
lines += ["", f"Launches started at once (and the last row's one after another), each one's wall time ({A.burst_rounds} rounds after a first one, bare and crisp "
          f"alternating; `/bin/true`, 5 MB image, crispd `--spares {A.burst_spares} --spares-per-user {A.burst_spares}`; "
          f"each burst waits until no spare is being made, at most "
          f"{waited[0]:.1f} s); crispd RSS {idle_rss:.1f} MB idle, {peak[0]:.1f} MB peak:", "",
          "| launches | bare p50 | bare max | crisp p50 | crisp max | ratio p50 | ratio max |", "|---|---:|---:|---:|---:|---:|---:|"]
for label in dict.fromkeys(k for k, _ in bursts):
    b, c = bursts[(label, "bare")], bursts[(label, "crisp")]
    lines.append(f"| {label} | {statistics.median(b):.0f} | {max(b):.0f} | {statistics.median(c):.0f} | {max(c):.0f} | "
                 f"{burst_ratio(label, statistics.median):.2f} | {burst_ratio(label, max):.2f} |")
lines += ["", "| target | measured | met |", "|---|---|---|"]
lines += [f"| {t} | {m} | {'yes' if ok else '**no**'} |" for t, m, ok in targets]
for err in failed[:3]:
    lines.append(f"\nA failed step said: {err}")
table = "\n".join(lines)
print(table)
with open(os.path.join(A.out, "summary.md"), "w") as f:
    f.write(table + "\n")
with open(os.path.join(A.out, "samples.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["section", "variant", "value", "unit"])
    w.writerows(samples)
with open(os.path.join(A.out, "summary.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["target", "measured", "met"])
    w.writerows([(t, m, "yes" if ok else "no") for t, m, ok in targets])

fig, (a1, a2) = plt.subplots(1, 2, figsize=(13, 5), gridspec_kw={"width_ratios": [3, 1]})
names = list(launch)
a1.barh(names, [statistics.median(launch[n]) for n in names],
        xerr=[[0] * len(names), [pct(launch[n], 90) - statistics.median(launch[n]) for n in names]], color="#4c72b0")
a1.invert_yaxis()
a1.set_xlabel("launch of /bin/true, ms (bar p50, whisker p90)")
names = list(cold)
a2.bar(range(len(names)), [statistics.median(cold[n]) / 1000 for n in names], color="#dd8452")
a2.set_xticks(range(len(names)), [n.replace(" + ", "\n+ ").replace(", ", "\n") for n in names], fontsize=8)
a2.set_ylabel("uncached 560 MB image, s")
fig.tight_layout()
fig.savefig(os.path.join(A.out, "bench.png"), dpi=90)
os.rmdir(WORK)
