#!/usr/bin/python3
"""bench/'s time to first task of a 2-node job whose image no node has, with and without
the job prolog's pull: the allocation's script spends 2 s before its first srun, as a job
script does (staging, module loads). Run by bench/run.sh after bench.py; variants
interleaved run by run; the target is reported, never asserted. Appends its table to
summary.md."""
import argparse
import os
import statistics
import subprocess

P = argparse.ArgumentParser()
for flag in ("--out", "--registry", "--user", "--containerd", "--node2-mnt", "--crispctl"):
    P.add_argument(flag, required=True)
P.add_argument("--runs", type=int, default=3)
A = P.parse_args()

IMAGE = f"{A.registry}/crisp-bench/large:1"
NODES = {"node 1": [], "node 2": ["nsenter", f"--mount={A.node2_mnt}", "--"]}
CTR = ["ctr", "--address", A.containerd, "-n", "k8s.io"]
SCRIPT_S = 2


def digest():
    out = subprocess.run(["skopeo", "inspect", "--tls-verify=false", f"docker://{IMAGE}"],
                         capture_output=True, text=True, check=True).stdout
    return out.split('"Digest": "')[1].split('"')[0]


DIGEST = digest()


def drop_image():
    """The image off both nodes (every ref CRI keeps of it), its content collected; a spare
    container of it would keep its layers, so the spares go first."""
    for prefix in NODES.values():
        subprocess.run(prefix + [A.crispctl, "rm", "--spares"], capture_output=True, check=True)
        listing = subprocess.run(prefix + CTR + ["images", "ls"], capture_output=True, text=True, check=True).stdout
        refs = [f[0] for f in (line.split() for line in listing.splitlines()[1:]) if f[2] == DIGEST]
        if refs:
            subprocess.run(prefix + CTR + ["images", "rm", "--sync"] + refs, capture_output=True, check=True)


def first_task_s(prolog):
    """Seconds from salloc to the later of the step's two tasks starting."""
    image = [f"--container-image={IMAGE}"] if prolog else []
    cmd = ["runuser", "-u", A.user, "--", "salloc", "-Q", "-p", "multi", "-N2"] + image + [
        "bash", "-c", f"sleep {SCRIPT_S}; srun --container-image={IMAGE} cut -d' ' -f1 /proc/uptime"]
    t0 = uptime()
    p = subprocess.run(cmd, cwd="/tmp", capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"bench: {' '.join(cmd)} failed: {p.stderr.strip()[-400:]}")
    return max(float(x) for x in p.stdout.split()) - t0


def uptime():
    """The kernel's clock the tasks read too (busybox's date has no sub-second)."""
    with open("/proc/uptime") as f:
        return float(f.read().split()[0])


variants = {"image cached on both nodes": [], "uncached, no prolog pull": [], "uncached, prolog pull": []}
for _ in range(A.runs):
    first_task_s(False)  # both nodes have it
    variants["image cached on both nodes"].append(first_task_s(False))
    for name, prolog in (("uncached, no prolog pull", False), ("uncached, prolog pull", True)):
        drop_image()
        subprocess.run(["sleep", "1"])
        variants[name].append(first_task_s(prolog))

med = {k: statistics.median(v) for k, v in variants.items()}
pull = med["uncached, no prolog pull"] - med["image cached on both nodes"]
hidden = med["uncached, no prolog pull"] - med["uncached, prolog pull"]
goal = 0.75 * min(SCRIPT_S, pull)
lines = ["", f"Time to first task of a 2-node job (`salloc -N2`, its script sleeps {SCRIPT_S} s before "
         f"`srun --container-image`), the 560 MB image uncached on both nodes ({A.runs} runs, median):", "",
         "| variant | s |", "|---|---:|"]
lines += [f"| {k} | {v:.2f} |" for k, v in med.items()]
lines += ["", "| target | measured | met |", "|---|---|---|",
          f"| prolog pull hides ≥ 75 % of the pull, or of the script's {SCRIPT_S} s if less | "
          f"{hidden:.2f} s of a {pull:.2f} s pull | {'yes' if hidden >= goal else '**no**'} |"]
table = "\n".join(lines)
print(table)
with open(os.path.join(A.out, "summary.md"), "a") as f:
    f.write(table + "\n")
