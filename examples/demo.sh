#!/bin/sh
# The djprobe demo, in six short steps (what `make demo` runs):
#   examples/demo.sh BUILD_DIR
# 1. `djp list`: the markers a program carries, with a header naming the
#    columns.
# 2. `djp trace -c`: launch the toy request server (examples/reqserver.c)
#    with the agent preloaded, every req_* marker armed before its main.
# 3. `djp trace -x`: attach to a server that is already running and has
#    never heard of djprobe (no preload, nothing linked): djp loads its
#    agent into it through ptrace, arms, traces for a second, and leaves
#    the server running, its text as it was.
# 4. `func:`: a function probe in a binary nobody here built (python3.11).
# 5. A SystemTap-style script that aggregates: latency per request kind.
# 6. The cost of one hit on the same marker: djp (a jump to a trampoline,
#    recording the event) beside bpftrace (a uprobe), measured here by
#    examples/hitloop.c, as a two-row table.
set -eu
O=${1:-build}
DJP="$O/djp"
SERVER="$O/examples/reqserver"
HITLOOP="$O/examples/hitloop"
PY=/usr/bin/python3.11
TMP=$(mktemp -d "${TMPDIR:-/tmp}/djp-demo.XXXXXX")
trap 'rm -rf "$TMP"; [ -n "${PID:-}" ] && kill "$PID" 2>/dev/null || true' EXIT

echo "== 1. djp list $SERVER  (the markers a program carries)"
"$DJP" list "$SERVER"

echo
echo "== 2. djp trace -c '$SERVER --requests 300 --threads 4' 'req_*'  (a launched program)"
"$DJP" trace -o "$TMP/events" -c "$SERVER --requests 300 --threads 4" 'req_*' 2> "$TMP/summary"
echo "-- first events (of $(wc -l < "$TMP/events")), and an error:"
head -n 4 "$TMP/events"
grep ' req_error ' "$TMP/events" | head -n 1
echo "-- summary (stderr):"
cat "$TMP/summary"

echo
echo "== 3. djp trace --duration 1 -x PID 'req_done'  (a running server without the agent)"
"$SERVER" --requests 0 --threads 2 --rate 2000 > /dev/null &
PID=$!
# running its main once its worker threads are there (3 tasks)
until [ "$(ls "/proc/$PID/task" 2>/dev/null | wc -l)" -ge 3 ]; do
	kill -0 "$PID" 2>/dev/null || { echo "demo: the server exited" >&2; exit 1; }
	sleep 0.05
done
echo "-- libdjprobe.so mapped before: $(grep -c libdjprobe "/proc/$PID/maps" || true)"
echo "-- req_done is armed as: $("$DJP" list --json "$SERVER" | grep '"req_done"' |
	sed -n 's/.*"arming":"\([a-z0-9]*\)".*/\1/p') (djp list --json says; what a hit costs: step 6)"
"$DJP" trace --duration 1 -x "$PID" 'req_done' > "$TMP/x" 2> "$TMP/summary"
echo "-- first events (of $(wc -l < "$TMP/x")):"
head -n 3 "$TMP/x"
cat "$TMP/summary"
echo "-- the server still runs: $(kill -0 "$PID" && echo yes)"
kill "$PID"
wait "$PID" 2>/dev/null || true
PID=

if [ -x "$PY" ]; then
	echo
	echo "== 4. djp trace -c '$PY -c ...' 'func:PyList_New'  (a function of a binary built elsewhere)"
	"$DJP" trace -o "$TMP/py" -c "$PY -c 'import json; json.dumps([[i] for i in range(100)])'" \
		'func:PyList_New' 2> "$TMP/summary"
	head -n 2 "$TMP/py"
	cat "$TMP/summary"
fi

echo
echo "== 5. djp -e SCRIPT -c '$SERVER --requests 500 --threads 4'  (a script aggregating)"
"$DJP" -c "$SERVER --requests 500 --threads 4" -e 'global lat
probe process.mark("req_done") { lat[$kind] <<< $latency_ns / 1000 }
probe end {
	printf("%-7s %8s %8s %8s\n", "KIND", "REQUESTS", "AVG_US", "MAX_US")
	foreach (k in lat+)
		printf("%-7s %8d %8d %8d\n", k, @count(lat[k]), @avg(lat[k]), @max(lat[k]))
}'
echo "-- (examples/latency.stp adds a histogram per kind and a top-5 table)"

# 6. ns/hit of the best of three runs (the machine may be busy), minus the
# bare loop's.
best() { sort -n | head -n 1; }
per_hit() { sed -n 's/^hits [0-9]* ns\/hit //p' "$1"; }
N=200000
echo
echo "== 6. the cost of a hit on the same marker ($HITLOOP: demo_hit, $N hits)"
for i in 1 2 3; do "$HITLOOP" $N; done | sed -n 's/^hits [0-9]* ns\/hit //p' | best > "$TMP/bare"
for i in 1 2 3; do
	"$DJP" trace --buffer-size 16777216 -o /dev/null -c "$HITLOOP $N" demo_hit > "$TMP/run" 2> "$TMP/sum"
	per_hit "$TMP/run"
	sed -n 's/.*: \([0-9]*\) events, \([0-9]*\) lost$/\1 recorded, \2 lost/p' "$TMP/sum" > "$TMP/djp.events"
done | best > "$TMP/djp"
bare=$(cat "$TMP/bare")
row() { awk -v t="$1" -v v="$2" -v b="$bare" -v e="$3" 'BEGIN { printf("%-10s %8.1f  %s\n", t, v - b, e) }'; }
echo "-- ns a hit costs over the bare loop's $bare ns a call (best of 3 runs, bpftrace 2)"
printf '%-10s %8s  %s\n' TOOL NS/HIT EVENTS
row djp "$(cat "$TMP/djp")" "$(cat "$TMP/djp.events")"
if command -v bpftrace > /dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
	abs=$(cd "$(dirname "$HITLOOP")" && pwd)/$(basename "$HITLOOP")
	for i in 1 2; do
		bpftrace -e "usdt:$abs:djp:demo_hit { @hits = count(); }" -c "$abs $N" > "$TMP/bt" 2> "$TMP/bt.err" ||
			{ cat "$TMP/bt.err" >&2; exit 1; }
		per_hit "$TMP/bt"
		sed -n 's/^@hits: \([0-9]*\)$/\1 counted/p' "$TMP/bt" > "$TMP/bt.events"
	done | best > "$TMP/bpftrace"
	row bpftrace "$(cat "$TMP/bpftrace")" "$(cat "$TMP/bt.events")"
else
	printf '%-10s %8s  %s\n' bpftrace - "not measured: bpftrace is not installed, or not root"
fi
echo "== demo done"
