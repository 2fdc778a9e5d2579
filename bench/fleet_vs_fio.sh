#!/usr/bin/env bash
# iolab's fleet (`iolab device --hosts`, over ssh) against fio's own
# client/server (`fio --server` on every host, `fio --client` from the
# control side) on the same namespace hosts and the same job, interleaved:
# the start skew between hosts (a paced job: 1,000 IOPS per host, null
# engine; fio's from each host's first logged I/O, in ms since the epoch:
# the namespaces share one clock, so the hosts' times compare directly;
# iolab's from the agents' release instants), the aggregate IOPS (null
# engine and a 4 KiB random read of a file per host, flat out) and the
# control side's CPU per host (user + system, children included: iolab's
# ssh clients count).
#
# Each host is a network namespace with a veth to this one, its own sshd
# (keys made here, in a temporary directory) and its own fio server on its
# address. Needs root, ip netns, sshd, fio. Everything goes at exit.
#
# The control side's CPU is everything its run started, counted by a cpuacct
# cgroup the run is put in (ssh ControlMasters that fork into the
# background included); iolab's is split into its own process (every
# thread's user + system time, read from /proc while the exited process is
# not yet reaped) and ssh (the rest). Set-up is the run's wall time beyond
# the job's runtime; RSS the control process's peak. KEX=curve25519-sha256
# puts that key exchange in the hosts' ssh_config (a choice of the user's
# config; OpenSSH's default hybrid post-quantum exchange costs more CPU);
# CM=1 adds a ControlMaster (ControlPersist 120 s): runs after the first
# reuse one connection per host and pay no handshake.
#
#   IOLAB=target/release/iolab HOSTS=3 ROUNDS=3 RUNTIME=5 [KEX=...] bash bench/fleet_vs_fio.sh
set -euo pipefail
IOLAB=$(realpath "${IOLAB:-target/release/iolab}")
FIO=${FIO:-fio}
HOSTS=${HOSTS:-3}
ROUNDS=${ROUNDS:-3}
RUNTIME=${RUNTIME:-5}
DIR=${DIR:-/var/tmp}
[ "$(id -u)" = 0 ] || { echo "needs root (namespaces)"; exit 1; }
W=$(mktemp -d "$DIR/iolab-fleet-bench.XXXXXX")
TAG=fb$$
CG=/sys/fs/cgroup/cpuacct/iolab-fleet-bench-$$
mkdir -p "$CG" || { echo "needs a cpuacct cgroup (cgroup v1 at /sys/fs/cgroup/cpuacct)"; exit 1; }
declare -a NS ADDRS SSHD_PIDS
cleanup() {
  for a in "${ADDRS[@]:-}"; do [ -n "$a" ] && [ -n "${CM:-}" ] && ssh -F "$W/ssh_config" -O exit "$a" 2>/dev/null || true; done
  for p in "${SSHD_PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
  for n in "${NS[@]:-}"; do
    [ -n "$n" ] || continue
    for p in $(ip netns pids "$n" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
    ip netns del "$n" 2>/dev/null || true
  done
  rm -rf "$W"
  rmdir "$CG" 2>/dev/null || true
}
trap cleanup EXIT INT TERM
# Run "$@" in the bench's cgroup; prints nothing. cg_ns: its CPU so far, ns.
in_cg() { ( echo "$BASHPID" > "$CG/cgroup.procs"; exec "$@" ); }
cg_ns() { cat "$CG/cpuacct.usage"; }
mkdir -p /run/sshd "$W/files"
ssh-keygen -q -t ed25519 -N '' -f "$W/host_key"
ssh-keygen -q -t ed25519 -N '' -f "$W/client_key"
cp "$W/client_key.pub" "$W/authorized_keys"
: > "$W/known_hosts"
third=$(( ($$ % 200) + 20 ))
for i in $(seq 0 $((HOSTS - 1))); do
  n="iolab-$TAG-$i"; NS+=("$n")
  ip netns add "$n"
  v="v$TAG$i"
  ip link add "$v" type veth peer name eth0 netns "$n"
  ip addr add "10.214.$third.$((i * 4 + 1))/30" dev "$v"; ip link set "$v" up
  a="10.214.$third.$((i * 4 + 2))"; ADDRS+=("$a")
  ip -n "$n" addr add "$a/30" dev eth0; ip -n "$n" link set eth0 up; ip -n "$n" link set lo up
  cat > "$W/sshd_config-$i" <<CFG
ListenAddress $a
HostKey $W/host_key
AuthorizedKeysFile $W/authorized_keys
PidFile none
StrictModes no
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
MaxStartups 100
CFG
  ip netns exec "$n" /usr/sbin/sshd -D -e -f "$W/sshd_config-$i" 2>/dev/null &
  SSHD_PIDS+=($!)
  echo "$a $(cut -d' ' -f1,2 "$W/host_key.pub")" >> "$W/known_hosts"
  ip netns exec "$n" "$FIO" --server="ip:$a,8765" >/dev/null 2>&1 &
done
cat > "$W/ssh_config" <<CFG
Host *
  User root
  IdentityFile $W/client_key
  IdentitiesOnly yes
  UserKnownHostsFile $W/known_hosts
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking yes
  LogLevel ERROR
${KEX:+  KexAlgorithms $KEX}
${CM:+  ControlMaster auto}
${CM:+  ControlPath $W/cm-%C}
${CM:+  ControlPersist 120}
CFG
# The control process's own CPU (all its threads), read from /proc while it
# is a zombie (waited with WNOWAIT), before it is reaped; then its wall time
# and peak RSS. Prints "self_s wall_s maxrss_kb wrapper_s" into the file
# named first (the wrapper's own CPU is taken off the cgroup's count).
cat > "$W/selfcpu.py" <<'PY'
import os, resource, subprocess, sys, time
out, cmd = sys.argv[1], sys.argv[2:]
t0 = time.monotonic()
p = subprocess.Popen(cmd)
os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)
f = open(f"/proc/{p.pid}/stat").read().rsplit(")", 1)[1].split()
tick = os.sysconf("SC_CLK_TCK")
own = (int(f[11]) + int(f[12])) / tick
p.wait()
wall = time.monotonic() - t0
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
me = resource.getrusage(resource.RUSAGE_SELF)
open(out, "w").write(f"{own} {wall} {rss} {me.ru_utime + me.ru_stime}\n")
sys.exit(p.returncode)
PY
sleep 1
LIST=$(IFS=,; echo "${ADDRS[*]}")

# Each host's job file (fio's client parses ${VAR} on its own side, so
# every host gets its own file name here).
for i in $(seq 0 $((HOSTS - 1))); do
  common="rw=randread\nbs=4k\ntime_based=1\nruntime=$RUNTIME\n"
  printf "[null]\nioengine=null\nsize=1g\n$common" > "$W/job-null-$i.fio"
  printf "[file]\nioengine=psync\nsize=64m\ndirect=0\nfilename=$W/files/f-h$i\n$common" > "$W/job-file-$i.fio"
  printf "[paced]\nioengine=null\nsize=1g\nrate_iops=1000\nwrite_lat_log=$W/files/lat\nlog_unix_epoch=1\n$common" > "$W/job-paced-$i.fio"
done

# One run; prints "skew_us iops cpu_ms ssh_ms setup_s rss_mb".
run_iolab() {
  local eng=$1 out="$W/iolab.json" t="$W/time" c0
  local extra=(--engine null)
  [ "$eng" = file ] && extra=(--engine psync --target "$W/files" --size 64m)
  [ "$eng" = paced ] && extra=(--engine null --rate $((1000 * HOSTS)))  # the whole load: 1,000 a second from each host
  c0=$(cg_ns)
  in_cg python3 "$W/selfcpu.py" "$t" "$IOLAB" device --hosts "$LIST" --ssh-config "$W/ssh_config" \
    --host-iolab "$IOLAB" "${extra[@]}" --rw randread --bs 4k --qd 1 --runtime "${RUNTIME}s" \
    --quiet --json "$out" >/dev/null
  python3 - "$out" "$t" "$(( $(cg_ns) - c0 ))" "$RUNTIME" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); p = r["points"][0]; h = p["extra"]["hosts"]
assert p["total"]["ops"] == sum(x["ops"] for x in h["per_host"]), "merge not exact"
own, wall, rss, wrapper = map(float, open(sys.argv[2]).read().split())
total = int(sys.argv[3]) / 1e9 - wrapper
print(h["start_skew_ns"] / 1e3, p["total"]["iops"], total * 1e3, (total - own) * 1e3,
      wall - float(sys.argv[4]), rss / 1024)
PY
}
run_fio() {
  local eng=$1 out="$W/fio.json" t="$W/time" c0
  local clients=()
  for i in $(seq 0 $((HOSTS - 1))); do clients+=(--client="ip:${ADDRS[$i]},8765" "$W/job-$eng-$i.fio"); done
  c0=$(cg_ns)
  in_cg python3 "$W/selfcpu.py" "$t" "$FIO" "${clients[@]}" \
    --output-format=json --output="$out" >/dev/null 2>&1
  python3 - "$out" "$t" "$W/files" "$(( $(cg_ns) - c0 ))" "$RUNTIME" <<'PY'
import glob, json, sys
text = open(sys.argv[1]).read()
d = json.loads(text[text.index("{"):])
jobs = [c for c in d.get("client_stats", []) if c.get("jobname") != "All clients"]
iops = sum(j["read"]["iops"] for j in jobs)
own, wall, rss, wrapper = map(float, open(sys.argv[2]).read().split())
firsts = [int(open(f).readline().split(",")[0]) for f in glob.glob(sys.argv[3] + "/lat_lat.*.log.*")]
skew = (max(firsts) - min(firsts)) * 1e3 if len(firsts) > 1 else float("nan")
total = int(sys.argv[4]) / 1e9 - wrapper
# fio starts no other process: what the cgroup counts beyond fio's own is
# the wrapper's unaccounted start and exit (iolab's ssh column has it too).
print(skew, iops, total * 1e3, (total - own) * 1e3, wall - float(sys.argv[5]), rss / 1024)
PY
  rm -f "$W"/files/lat_*
}

echo "hosts=$HOSTS rounds=$ROUNDS runtime=${RUNTIME}s iolab=$IOLAB fio=$($FIO --version)"
printf '%-5s %-5s %-6s %10s %12s %14s %10s %10s %8s\n' round eng tool skew_us iops ctl_ms/host of_it_ssh setup_s rss_mb
declare -A R
for r in $(seq 1 "$ROUNDS"); do
  for eng in paced null file; do
    order="iolab fio"; [ $((r % 2)) = 0 ] && order="fio iolab"
    for tool in $order; do
      read -r skew iops cpu ssh setup rss < <(run_"$tool" "$eng")
      per=$(python3 -c "print($cpu / $HOSTS)")
      ssh_per=$(python3 -c "print($ssh / $HOSTS)")
      own=$(python3 -c "print(($cpu - $ssh) / $HOSTS)")
      printf '%-5s %-5s %-6s %10.0f %12.0f %14.1f %10.1f %10.2f %8.1f\n' "$r" "$eng" "$tool" "$skew" "$iops" "$per" "$ssh_per" "$setup" "$rss"
      R[$r,$eng,$tool]="$skew $iops $per $own $setup $rss"
    done
  done
done
echo
echo "median over rounds (spread min..max); ratios iolab/fio per round"
for eng in paced null file; do
  args=""
  for r in $(seq 1 "$ROUNDS"); do args+=" ${R[$r,$eng,iolab]} ${R[$r,$eng,fio]}"; done
  python3 - "$eng" $args <<'PY'
import statistics as st, sys
eng = sys.argv[1]; v = list(map(float, sys.argv[2:]))
rows = [v[i:i + 12] for i in range(0, len(v), 12)]
def show(name, i, unit, fmt="{:.0f}"):
    a = [r[i] for r in rows]; b = [r[i + 6] for r in rows]
    ratio = [x / y for x, y in zip(a, b) if y == y and y]
    med = lambda xs: fmt.format(st.median(xs)) if xs else "n/a"
    rr = f"{st.median(ratio):.2f} ({min(ratio):.2f}..{max(ratio):.2f})" if ratio else "n/a"
    print(f"  {eng:5} {name:22} iolab {med(a)} {unit}  fio {med(b)} {unit}  iolab/fio {rr}")
show("start skew", 0, "us")
if eng != "paced":
    show("aggregate IOPS", 1, "")
show("control CPU per host", 2, "ms", "{:.1f}")
show("  the tool's own process", 3, "ms", "{:.1f}")
show("set-up (wall - runtime)", 4, "s", "{:.2f}")
show("control RSS", 5, "MB", "{:.1f}")
PY
done
