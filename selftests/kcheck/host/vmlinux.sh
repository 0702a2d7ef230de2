#!/bin/sh
# Host test of make kcheck KERNEL=marked: the marked image's markers as the
# seeds inspect them, in the built vmlinux (no guest needed).
#
#   - `djp list VMLINUX` lists the series' markers, each named as the
#     tracepoint it sits beside, at least 12 names;
#   - `.markers` is an output section of its own, allocated and read-only
#     (not .data), bounded by __start___markers and __stop___markers;
#   - `readelf -x .markers` shows the records (the first begins with
#     version 1);
#   - `objdump -d` shows the 6-byte NOP `66 0f 1f 44 00 00` at every site
#     djp lists.
# Prints TAP lines prefixed "vmlinux: ", as the guest's sources are, for
# summary.awk to read from the same log.
# Usage: vmlinux.sh VMLINUX DJP
vmlinux=$1 djp=$2
[ -f "$vmlinux" ] && [ -x "$djp" ] || { echo "vmlinux.sh: usage: vmlinux.sh VMLINUX DJP" >&2; exit 2; }
tap_prefix="vmlinux: "
. "$(dirname "$0")/../tap.inc" # tap, image_markers
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "vmlinux: 1..5"

"$djp" list --no-header "$vmlinux" >"$tmp/list" 2>"$tmp/err"
st=$?
missing=""
for name in $image_markers; do
	grep -q "^$name " "$tmp/list" || missing="$missing $name"
done
names=$(cut -d' ' -f1 "$tmp/list" | sort -u | wc -l)
[ $st = 0 ] && [ -z "$missing" ] && [ "$names" -ge 12 ]
tap $? "djp list vmlinux: the series' $(echo $image_markers | wc -w) markers ($names names, $(wc -l <"$tmp/list") sites)" \
	"status $st, missing:$missing $(head -c 300 "$tmp/err")"
echo "vmlinux: # $(awk '{ k[$1]++ } END { for (m in k) printf "%s %d, ", m, k[m] }' "$tmp/list")"

# Name Type Address Off Size ES Flg, once "[Nr]" is cut (it may hold a
# space): allocated (A), never writable (no W).
readelf -SW "$vmlinux" | sed -n 's/^ *\[ *[0-9]*\] *//p' >"$tmp/sections"
flags=$(awk '$1 == ".markers" { print $7 }' "$tmp/sections")
case $flags in *A*) case $flags in *W*) false ;; *) true ;; esac ;; *) false ;; esac
tap $? ".markers is a section of its own, allocated and read-only" "flags '$flags'"

addr=$(awk '$1 == ".markers" { print $3 }' "$tmp/sections")
size=$(awk '$1 == ".markers" { print $5 }' "$tmp/sections")
start=$(nm "$vmlinux" | awk '$3 == "__start___markers" { print $1 }')
stop=$(nm "$vmlinux" | awk '$3 == "__stop___markers" { print $1 }')
# Kernel addresses do not fit the shell's signed 64-bit arithmetic: the
# low 32 bits carry the difference (the section is far smaller than 4 GB).
lo() { echo $((0x$(echo "$1" | sed 's/^0x//; s/.*\(........\)$/\1/'))); }
[ -n "$addr" ] && [ "$start" = "$addr" ] && [ $(($(lo "$stop") - $(lo "$start"))) = $((0x$size)) ]
tap $? "__start___markers and __stop___markers bound it" "section at $addr size $size, symbols $start..$stop"

# The first record: u16 version 1, then its size.
readelf -x .markers "$vmlinux" >"$tmp/hex" 2>&1
first=$(awk '/^  0x/ { print $2; exit }' "$tmp/hex")
case $first in 0100*) true ;; *) false ;; esac
tap $? "readelf -x .markers: the records, version 1 first" "first word '$first'"

bad=0 sites=0
while read -r name address rest; do
	end=$(printf '%s%08x' "${address%????????}" $(($(lo "$address") + 6)))
	got=$(objdump -d --start-address="$address" --stop-address="$end" "$vmlinux" |
		awk -F'\t' '/^ *ffffffff[0-9a-f]*:/ { print $2 }' | tr -d ' \n')
	sites=$((sites + 1))
	if [ "$got" != 660f1f440000 ]; then
		bad=$((bad + 1))
		echo "vmlinux: # $name at $address: '$got'"
	fi
done <"$tmp/list"
[ $sites -gt 0 ] && [ $bad = 0 ]
tap $? "objdump -d: the 6-byte NOP at each of the $sites sites" "$bad sites without it"
