#!/bin/sh
# The benchmark table.  Runs every program in BUILD/bench/ (or the ones named
# after BUILD); each prints rows "name | value | target | status", which are
# prefixed with the program's name and printed as one aligned table.  A
# result over its target is reported, not failed: a loaded machine is not a
# bug.  A program that crashes or exits non-zero makes the exit status 1.
# The table's first line names the CPU: a figure holds for the CPU it was
# measured on, and this machine class comes with AMD and Intel ones.
# Usage: bench/run.sh BUILD [PROGRAM...]
build=${1:-build}
[ $# -gt 0 ] && shift
progs=$*
[ -n "$progs" ] || progs=$(ls "$build"/bench/* 2>/dev/null)
rows=$(mktemp) || exit 1
trap 'rm -f "$rows"' EXIT
status=0
for p in $progs; do
	[ -f "$p" ] && [ -x "$p" ] || continue
	case $(basename "$p") in *.*) continue ;; esac
	name=$(basename "$p")
	out=$("$p") || { rc=$?; status=1; out="run | exit status $rc | - | error"; }
	printf '%s\n' "$out" | grep '|' | sed "s/^/$name: /" >>"$rows"
done
field() { sed -n "s/^$1[[:space:]]*: *//p" /proc/cpuinfo | head -n 1; }
echo "CPU: $(field 'model name') ($(field vendor_id) family $(field 'cpu family') model $(field model), $(getconf _NPROCESSORS_ONLN) online)"
{
	echo "benchmark | value | target | status"
	cat "$rows"
} | awk -F' *[|] *' '
	{ for (i = 1; i <= NF; i++) { c[NR, i] = $i; if (length($i) > w[i]) w[i] = length($i) } n = NR; if (NF > nf) nf = NF }
	END { for (r = 1; r <= n; r++) { line = ""
		for (i = 1; i <= nf; i++) line = line (i < nf ? sprintf("%-*s  ", w[i], c[r, i]) : c[r, i])
		print line } }'
exit $status
