#!/usr/bin/env bash
# The views' own cost, two iolab builds side by side (e.g. before and after
# the figure catalogue): wall time of `report` (HTML and text) and `compare`
# (text and HTML) on the report fixtures, each view run REPS times per
# round, rounds interleaved A B / B A. Prints per view the median time per
# call of each build and the median ratio new/old with its spread.
# Put both binaries in one directory first (a copy in /tmp and the one in
# target/ started 0.5-1 ms apart per call here, which is most of a view).
# Usage: OLD=/tmp/iolab-old NEW=/tmp/iolab-new bench/views_cost.sh [ROUNDS] [REPS]
set -euo pipefail
ROUNDS=${1:-5}
REPS=${2:-20}
OLD=${OLD:?set OLD to the old iolab binary}
NEW=${NEW:-target/release/iolab}
F=$(cd "$(dirname "$0")/.." && pwd)/tests/fixtures/report
python3 - "$OLD" "$NEW" "$F" "$ROUNDS" "$REPS" <<'PY'
import os, statistics as st, subprocess, sys, tempfile, time
old, new, f, rounds, reps = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
out = tempfile.mkdtemp(prefix="iolab-views.")
views = {
    "report html (run-all-steps)": lambda b: [b, "report", f"{f}/run-all-steps.json", "-o", f"{out}/r.html", "--force"],
    "report text (remote-nbd)": lambda b: [b, "report", f"{f}/remote-nbd.json", "--format", "text"],
    "compare text (iolab vs fio)": lambda b: [b, "compare", f"{f}/run-standard.json", f"{f}/fio-randread.json", "--by", "rw,bs,qd"],
    "compare html (loadlat vs run)": lambda b: [b, "compare", f"{f}/device-loadlat.json", f"{f}/run-standard.json", "--by", "rw,bs", "--html", f"{out}/c.html", "--force"],
    "compare text (oltp)": lambda b: [b, "compare", f"{f}/oltp-postgres.json", f"{f}/oltp-postgres.json"],
}
def per_call(cmd):
    t0 = time.perf_counter()
    for _ in range(reps):
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return (time.perf_counter() - t0) / reps
res = {}
for r in range(rounds):
    order = [("OLD", old), ("NEW", new)] if r % 2 == 0 else [("NEW", new), ("OLD", old)]
    for name, mk in views.items():
        for who, b in order:
            res.setdefault((name, who), []).append(per_call(mk(b)))
for name in views:
    o, n = res[(name, "OLD")], res[(name, "NEW")]
    ratios = [b / a for a, b in zip(o, n)]
    print(f"{name}: old {st.median(o)*1e3:.1f} ms, new {st.median(n)*1e3:.1f} ms per call; "
          f"new/old {st.median(ratios):.3f} ({min(ratios):.3f}..{max(ratios):.3f})")
PY
