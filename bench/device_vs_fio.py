#!/usr/bin/env python3
"""iolab vs fio 3.33 on the same jobs, side by side.

Runs each job with iolab and with fio on the same 1 GiB file, interleaved
(A B in odd rounds, B A in even rounds), and prints the median ratio
iolab/fio with its spread (min..max over rounds) for IOPS, mean latency and
p99 latency; then the overhead comparison (null engine; io_uring on tmpfs)
and iolab's timer cost. Output is Markdown, ready for docs/benchmarks.md.

Usage: bench/device_vs_fio.py [--rounds 3] [--runtime 5] [--dir /var/tmp]
                              [--only agreement|overhead] [--job SUBSTRING]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IOLAB = os.environ.get("IOLAB") or os.path.join(ROOT, "target", "release", "iolab")

# (name, rw, bs, qd, engine, mix)
AGREEMENT_JOBS = [
    ("randread-4k-qd1-psync", "randread", "4k", 1, "psync", None),
    ("randread-4k-qd8-aio", "randread", "4k", 8, "aio", None),
    ("randread-4k-qd32-io_uring", "randread", "4k", 32, "io_uring", None),
    ("randwrite-4k-qd8-io_uring", "randwrite", "4k", 8, "io_uring", None),
    ("randrw70-4k-qd16-aio", "randrw", "4k", 16, "aio", 70),
    ("read-64k-qd8-io_uring", "read", "64k", 8, "io_uring", None),
    ("randread-64k-qd32-aio", "randread", "64k", 32, "aio", None),
    ("read-1m-qd8-aio", "read", "1m", 8, "aio", None),
    ("write-1m-qd1-psync", "write", "1m", 1, "psync", None),
    ("readwrite50-64k-qd8-io_uring", "readwrite", "64k", 8, "io_uring", 50),
]

FIO_ENGINE = {"psync": "psync", "aio": "libaio", "io_uring": "io_uring", "null": "null"}


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stdout}\n{p.stderr}")
    return p.stdout


def iolab_job(path, rw, bs, qd, engine, mix, runtime, extra=()):
    out = os.path.join(os.path.dirname(path) or tempfile.gettempdir(), "iolab.json")
    target = ["--target", path] if path else []
    cmd = [IOLAB, "device", *target, "--rw", rw, "--bs", bs, "--qd", str(qd),
           "--engine", engine, "--runtime", f"{runtime}s", "--json", out, "--quiet", *extra]
    if mix is not None:
        cmd += ["--mix", str(mix)]
    if rw in ("write", "randwrite", "randrw", "readwrite") and engine != "null":
        cmd += ["--overwrite"]
    run(cmd)
    with open(out) as f:
        p = json.load(f)["points"][0]
    op = "read" if "read" in p["ops"] else "write"
    lat = p["ops"][op]["lat"]
    return {"iops": p["total"]["iops"], "mean": lat["mean_ns"], "p99": lat["percentiles_ns"]["99.000000"],
            "cpu": p["cpu"]["usr_pct"] + p["cpu"]["sys_pct"]}


def fio_job(path, rw, bs, qd, engine, mix, runtime, extra=()):
    cmd = ["fio", "--name=j", f"--rw={rw}", f"--bs={bs}", f"--iodepth={qd}", f"--ioengine={FIO_ENGINE[engine]}",
           "--time_based", f"--runtime={runtime}", "--norandommap", "--randrepeat=0", "--lat_percentiles=1",
           "--output-format=json", *extra]
    if engine != "null":
        cmd += [f"--filename={path}", "--size=1g"]
    else:
        cmd += ["--size=1g"]
    if mix is not None:
        cmd += [f"--rwmixread={mix}"]
    j = json.loads(run(cmd))["jobs"][0]
    op = "read" if j["read"]["io_bytes"] > 0 else "write"
    lat = j[op]["lat_ns"]
    return {"iops": j["read"]["iops"] + j["write"]["iops"], "mean": lat["mean"],
            "p99": lat.get("percentile", {}).get("99.000000", 0), "cpu": j["usr_cpu"] + j["sys_cpu"]}


def ratio_summary(values):
    med = statistics.median(values)
    return f"{med:.3f} ({min(values):.3f}..{max(values):.3f})"


def interleaved(rounds, a, b):
    """Run a() and b() alternately; return lists of (a_result, b_result)."""
    pairs = []
    for r in range(rounds):
        if r % 2 == 0:
            x = a(); y = b()
        else:
            y = b(); x = a()
        pairs.append((x, y))
    return pairs


def agreement(args, path):
    print(f"### Agreement with fio (O_DIRECT, 1 GiB file, {args.runtime} s per run, {args.rounds} rounds)\n")
    print("| job | iolab IOPS | fio IOPS | IOPS ratio | mean lat ratio | p99 lat ratio |")
    print("|---|---:|---:|---|---|---|")
    for name, rw, bs, qd, engine, mix in AGREEMENT_JOBS:
        if args.job and args.job not in name:
            continue
        pairs = interleaved(args.rounds,
                            lambda: iolab_job(path, rw, bs, qd, engine, mix, args.runtime, ["--direct"] if engine != "null" else []),
                            lambda: fio_job(path, rw, bs, qd, engine, mix, args.runtime, ["--direct=1"]))
        r = {k: [x[k] / y[k] for x, y in pairs if y[k]] for k in ("iops", "mean", "p99")}
        print(f"| {name} | {statistics.median([x['iops'] for x, _ in pairs]):,.0f} | "
              f"{statistics.median([y['iops'] for _, y in pairs]):,.0f} | {ratio_summary(r['iops'])} | "
              f"{ratio_summary(r['mean'])} | {ratio_summary(r['p99'])} |", flush=True)
    print()


def overhead(args, shm_file):
    print(f"### Overhead ({args.runtime} s per run, {args.rounds} rounds, 1 job pinned to CPU 0)\n")
    print("| job | iolab IOPS | fio IOPS | ratio iolab/fio |")
    print("|---|---:|---:|---|")
    cases = [
        ("null engine, 4k, QD1", lambda: iolab_job("", "randread", "4k", 1, "null", None, args.runtime, ["--cpus", "0"]),
         lambda: fio_job("", "randread", "4k", 1, "null", None, args.runtime, ["--cpus_allowed=0"])),
        ("null engine, 4k, QD32", lambda: iolab_job("", "randread", "4k", 32, "null", None, args.runtime, ["--cpus", "0"]),
         lambda: fio_job("", "randread", "4k", 32, "null", None, args.runtime, ["--cpus_allowed=0"])),
        ("io_uring, /dev/shm file, 4k randread, QD32, buffered",
         lambda: iolab_job(shm_file, "randread", "4k", 32, "io_uring", None, args.runtime, ["--cpus", "0", "--buffered"]),
         lambda: fio_job(shm_file, "randread", "4k", 32, "io_uring", None, args.runtime, ["--cpus_allowed=0", "--direct=0"])),
        ("io_uring, /dev/shm file, 4k randread, QD32, buffered, submit batches of 32 (both tools)",
         lambda: iolab_job(shm_file, "randread", "4k", 32, "io_uring", None, args.runtime,
                           ["--cpus", "0", "--buffered", "--submit-batch", "32"]),
         lambda: fio_job(shm_file, "randread", "4k", 32, "io_uring", None, args.runtime,
                         ["--cpus_allowed=0", "--direct=0", "--iodepth_batch_submit=32"])),
    ]
    for name, a, b in cases:
        pairs = interleaved(args.rounds, a, b)
        ratios = [x["iops"] / y["iops"] for x, y in pairs]
        print(f"| {name} | {statistics.median([x['iops'] for x, _ in pairs]):,.0f} | "
              f"{statistics.median([y['iops'] for _, y in pairs]):,.0f} | {ratio_summary(ratios)} |", flush=True)
    print()
    t = json.loads(run([IOLAB, "sysinfo", "--json"]))["timer"]
    print("### iolab's own cost per I/O (from `iolab sysinfo --json`)\n")
    print(f"- clock read (CLOCK_MONOTONIC, vDSO): {t['clock_read_ns']:.1f} ns")
    print(f"- histogram record: {t['histogram_record_ns']:.1f} ns")
    print(f"- per I/O (2 clock reads + 4 histogram records): {t['per_io_ns']:.0f} ns\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runtime", type=int, default=5)
    ap.add_argument("--dir", default="/var/tmp")
    ap.add_argument("--only", choices=["agreement", "overhead"])
    ap.add_argument("--job", help="run only agreement jobs whose name contains this")
    args = ap.parse_args()
    if not os.path.exists(IOLAB):
        sys.exit("build first: cargo build --release")
    if not shutil.which("fio"):
        sys.exit("fio is not installed (scripts/install-deps.sh)")
    print(f"Machine: {os.uname().nodename}, {os.cpu_count()} CPUs, kernel {os.uname().release}; "
          f"{run(['fio', '--version']).strip()}; iolab {run([IOLAB, '--version']).strip()}\n")
    work = tempfile.mkdtemp(prefix="iolab-bench.", dir=args.dir)
    shm = tempfile.mkdtemp(prefix="iolab-bench.", dir="/dev/shm")
    try:
        path = os.path.join(work, "data.bin")
        shm_file = os.path.join(shm, "data.bin")
        if args.only != "overhead":
            run([IOLAB, "device", "--target", path, "--size", "1g", "--engine", "psync", "--io-count", "1", "--keep", "--quiet"])
            agreement(args, path)
        if args.only != "agreement":
            run([IOLAB, "device", "--target", shm_file, "--size", "1g", "--engine", "psync", "--buffered", "--io-count", "1",
                 "--keep", "--quiet"])
            overhead(args, shm_file)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(shm, ignore_errors=True)


if __name__ == "__main__":
    main()
