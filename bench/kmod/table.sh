#!/bin/sh
# The in-kernel benchmark's table (make kbench): the rows djp_kbench.ko
# printed on the guest's console ("djp_kbench: row NAME | VALUE | TARGET |
# STATUS"), laid out as bench/run.sh lays out make bench's, under the host's
# CPU and how the guest ran: under TCG every figure is the emulator's, and
# only the ratios between rows of one run mean anything.  A guest that did
# not finish, or a row that says "error", makes the exit status 1.
# Usage: bench/kmod/table.sh CONSOLE_LOG QEMU_STATUS
log=$1
status=${2:-0}
[ -f "$log" ] || { echo "table.sh: no console log at '$log'" >&2; exit 1; }
field() { sed -n "s/^$1[[:space:]]*: *//p" /proc/cpuinfo | head -n 1; }
echo "CPU: $(field 'model name') ($(field vendor_id) family $(field 'cpu family') model $(field model), $(getconf _NPROCESSORS_ONLN) online)"
echo "guest: $(sed -n 's/^kcheck: booting .* with \([0-9]*\) CPUs, -accel \([a-z]*\).*/\1 CPUs, \2/p' "$log" | head -n 1)"
rows=$(tr -d '\r' <"$log" | sed -n 's/^\[ *[0-9.]*\] djp_kbench: row //p; s/^djp_kbench: row //p')
tr -d '\r' <"$log" | sed -n 's/^\[ *[0-9.]*\] djp_kbench: # */# /p'
{
	echo "benchmark | value | target | status"
	printf '%s\n' "$rows" | sed '/^$/d; s/^/kernel: /'
} | awk -F' *[|] *' '
	{ for (i = 1; i <= NF; i++) { c[NR, i] = $i; if (length($i) > w[i]) w[i] = length($i) } n = NR; if (NF > nf) nf = NF }
	END { for (r = 1; r <= n; r++) { line = ""
		for (i = 1; i <= nf; i++) line = line (i < nf ? sprintf("%-*s  ", w[i], c[r, i]) : c[r, i])
		print line } }'
if ! grep -q '^kcheck: done' "$log"; then
	echo "kbench: the guest did not finish (QEMU exit status $status); its console is in $log" >&2
	exit 1
fi
if [ -z "$rows" ] || printf '%s\n' "$rows" | grep -q '| *error *$'; then
	echo "kbench: a measurement failed; the console is in $log" >&2
	exit 1
fi
exit 0
