#!/bin/sh
# The djprobe demo: trace the toy request server (examples/reqserver.c).
#   examples/demo.sh BUILD_DIR      (what `make demo` runs)
# 1. `djp trace -c`: launch the server with the agent preloaded, every req_*
#    marker armed before its main, and print events until it exits.
# 2. `djp trace -x`: attach to a server that is already running, for one
#    second, as JSON; then leave it running untouched (and stop it).
# 3. `djp SCRIPT -c`: a SystemTap-style script that prints a latency
#    histogram per request kind and a top-N table (examples/latency.stp).
set -eu
O=${1:-build}
DJP="$O/djp"
SERVER="$O/examples/reqserver"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/djp-demo.XXXXXX")
trap 'rm -rf "$TMP"; [ -n "${PID:-}" ] && kill "$PID" 2>/dev/null || true' EXIT

echo "== djp trace -c '$SERVER --requests 300 --threads 4' 'req_*'"
"$DJP" trace -o "$TMP/events" -c "$SERVER --requests 300 --threads 4" 'req_*' 2> "$TMP/summary"
echo "-- first events (of $(wc -l < "$TMP/events")):"
head -n 8 "$TMP/events"
echo "-- errors:"
grep ' req_error ' "$TMP/events" | head -n 3
echo "-- summary (stderr):"
cat "$TMP/summary"

echo
echo "== djp trace --json --duration 1 -x PID 'req_done'  (a running server)"
LD_PRELOAD="$O/libdjprobe.so" "$SERVER" --requests 0 --threads 2 --rate 2000 > /dev/null &
PID=$!
sleep 0.3
"$DJP" trace --json --duration 1 -x "$PID" 'req_done' > "$TMP/json" 2> "$TMP/summary"
echo "-- first events (of $(wc -l < "$TMP/json")):"
head -n 3 "$TMP/json"
echo "-- summary (stderr):"
cat "$TMP/summary"
kill "$PID"
wait "$PID" 2>/dev/null || true
PID=
echo
echo "== djp examples/latency.stp -c '$SERVER --requests 500 --threads 4'  (a probe script)"
"$DJP" -c "$SERVER --requests 500 --threads 4" examples/latency.stp
echo "== demo done"
