#!/usr/bin/env bash
# iolab kv --engine cassandra vs YCSB 0.17.0 with a cassandra-cql binding of
# our own (bench/ycsb-cassandra: YCSB core and the DataStax Java driver 4.17
# from Maven Central, YCSB's cassandra-cql statements), on the same server:
# a Cassandra this script starts on 127.0.0.1:$PORT with iolab's settings
# (CASSANDRA_CONF: a cassandra.yaml), each tool in its own keyspace (iolab's
# iolab_<pid>, YCSB's ycsb). Per round and workload (A, C): each tool's load,
# then a run bounded by RUN_S; the order alternates by round. iolab: the run
# phase's throughput and getrusage; YCSB: between 3 s and 13 s of its run
# (after the JVM's start and JIT warm-up), the operations its status lines
# (once a second) count and the CPU /proc/PID/stat counts.
# Usage: CASSANDRA_PORT=19042 [ROUNDS=3] [RECORDS=10000] [RUN_S=15] [THREADS=4]
#        bench/kv_cassandra_vs_ycsb.sh   (the server must be running)
set -euo pipefail
cd "$(dirname "$0")/.."
PORT=${CASSANDRA_PORT:?the native port of a running Cassandra}
ROUNDS=${ROUNDS:-3}
RECORDS=${RECORDS:-10000}
RUN_S=${RUN_S:-15}
THREADS=${THREADS:-4}
IOLAB=${IOLAB:-./target/release/iolab}
[ -x "$IOLAB" ] || cargo build --release --locked
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# YCSB core and the DataStax driver, and the binding compiled against them.
cat >"$work/pom.xml" <<'POM'
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>iolab</groupId><artifactId>ycsb-cql</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>site.ycsb</groupId><artifactId>core</artifactId><version>0.17.0</version></dependency>
    <dependency><groupId>com.datastax.oss</groupId><artifactId>java-driver-core</artifactId><version>4.17.0</version></dependency>
  </dependencies>
</project>
POM
mvn -q -B -Dstyle.color=never -f "$work/pom.xml" dependency:copy-dependencies \
  -DincludeScope=runtime -DoutputDirectory="$work/lib" >&2
mkdir -p "$work/classes"
javac -d "$work/classes" -cp "$work/lib/*" bench/ycsb-cassandra/IolabCassandra.java
YCSB="java -cp $work/classes:$work/lib/* site.ycsb.Client -db site.ycsb.db.IolabCassandra \
 -p hosts=127.0.0.1 -p port=$PORT -p recordcount=$RECORDS -threads $THREADS"
URL="cassandra://127.0.0.1:$PORT"
echo "iolab: $($IOLAB --version); YCSB 0.17.0 + DataStax java-driver-core 4.17.0; $(java -version 2>&1 | head -1)"
echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
rows=$work/rows.txt
: >"$rows"
hz=$(getconf CLK_TCK)
for r in $(seq 1 "$ROUNDS"); do
  for w in a c; do
    wl=examples/ycsb/workload$w
    run_iolab() {
      $IOLAB kv "$w" --engine cassandra --server-url "$URL" --threads "$THREADS" \
        -p recordcount="$RECORDS" -p operationcount=2000000000 -p maxexecutiontime="$RUN_S" \
        --quiet -o "$work/io.json" >/dev/null
      python3 - "$work/io.json" "$r" "$w" >>"$rows" <<'PY'
import json, sys
p = [p for p in json.load(open(sys.argv[1]))["points"] if p["name"].endswith(".run")][0]
cpu = (p["cpu"]["user_ns"] + p["cpu"]["sys_ns"]) / p["total"]["ops"] / 1e3
print(sys.argv[2], sys.argv[3], "iolab", p["total"]["iops"], cpu)
PY
    }
    run_ycsb() {
      $YCSB -load -P "$wl" -p iolab.create=true >/dev/null 2>&1
      $YCSB -t -s -p status.interval=1 -P "$wl" -p operationcount=2000000000 \
        -p maxexecutiontime="$RUN_S" >"$work/y.txt" 2>"$work/y.status" &
      pid=$!
      # Operations so far: the last status line (once a second).
      done_ops() { grep -o '[0-9]* operations;' "$work/y.status" | tail -1 | cut -d' ' -f1; }
      sleep 3; t0=$(awk '{print $14+$15}' /proc/$pid/stat); n0=$(done_ops)
      sleep 10; t1=$(awk '{print $14+$15}' /proc/$pid/stat); n1=$(done_ops)
      wait $pid
      grep -q 'Return=ERROR' "$work/y.txt" && echo "YCSB errors: $(grep Return= "$work/y.txt")" >&2
      echo "$r $w ycsb $(python3 -c "print(($n1-$n0)/10, ($t1-$t0)/$hz/max($n1-$n0,1)*1e6)")" >>"$rows"
    }
    if [ $((r % 2)) -eq 1 ]; then run_iolab; run_ycsb; else run_ycsb; run_iolab; fi
    tail -n 2 "$rows"
  done
done
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$rows" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
for w in ("a", "c"):
    by = {}
    for r, ww, tool, ops, cpu in rows:
        if ww == w:
            by.setdefault(r, {})[tool] = (float(ops), float(cpu))
    thr = [v["iolab"][0] / v["ycsb"][0] for v in by.values() if len(v) == 2]
    cpu = [v["iolab"][1] / v["ycsb"][1] for v in by.values() if len(v) == 2]
    med = lambda t, i: statistics.median(v[t][i] for v in by.values())
    print(f"{w}: iolab {med('iolab',0):.0f} ops/s {med('iolab',1):.1f} us/op; ycsb {med('ycsb',0):.0f} ops/s "
          f"{med('ycsb',1):.1f} us/op; throughput iolab/ycsb {statistics.median(thr):.2f} "
          f"({min(thr):.2f}..{max(thr):.2f}), CPU/op {statistics.median(cpu):.2f} ({min(cpu):.2f}..{max(cpu):.2f}), n={len(thr)}")
PY
