#!/bin/sh
# Guest test: the kernel image's own markers (make kcheck KERNEL=marked).
#
# A kernel built with the patch series of kernel-patches/linux-6.1 exports
# kernel_markers; djprobe.ko reads the image's records through it when it
# loads, as a djp_kmod named "vmlinux".  With kcheck.marked=1 on the kernel
# command line (the Makefile passes it for KERNEL=marked) the markers must
# be there: listed, off, armed by `djp trace -k` with exactly one event per
# hit, and off again after.  The count is exact because the hits come from
# one shell of known pid: it starts 20 background commands, each one fork
# made by that shell (`[` and arithmetic are built in), and the events of
# sched_process_fork are those whose PID column is that shell's.  Without
# kcheck.marked=1 (a stock kernel) the image must have no markers.
# Prints TAP lines; runs inside the kcheck guest as root, with djprobe.ko
# loaded by /init.
marked=0
for arg in $(cat /proc/cmdline); do
	[ "$arg" = kcheck.marked=1 ] && marked=1
done
. "$(dirname "$0")/tap.inc" # tap, wait_probe, image_markers

if [ $marked = 0 ]; then
	echo "1..1"
	out=$(djp list -k 'vmlinux:*' 2>/dev/null)
	[ -z "$out" ]
	tap $? "a kernel without the series has no vmlinux markers" "$out"
	exit 0
fi

echo "1..5"
grep -q ' kernel_markers$' /proc/kallsyms
tap $? "the kernel exports kernel_markers"

djp list -k 'vmlinux:*' >/tmp/klist 2>&1
missing=""
for m in $image_markers; do
	grep -q "^vmlinux:$m  0xffffffff[0-9a-f]*  off  0  " /tmp/klist || missing="$missing $m"
done
[ -z "$missing" ]
tap $? "djp list -k: the image's $(echo $image_markers | wc -w) markers, each off ($(wc -l </tmp/klist) sites)" \
	"missing:$missing; $(head -c 400 /tmp/klist)"
sed 's/^/# /' /tmp/klist

djp trace -k 'vmlinux:sched_process_fork' >/tmp/ktrace.out 2>/tmp/ktrace.err &
pid=$!
wait_probe vmlinux:sched_process_fork
tap $? "djp trace -k vmlinux:sched_process_fork connects" "$(cat /tmp/ktrace.err)"
sh -c 'echo $$ >/tmp/forker; i=0; while [ $i -lt 20 ]; do /bin/busybox true & wait; i=$((i + 1)); done'
kill -TERM $pid
wait $pid
st=$?
forker=$(cat /tmp/forker)
got=$(awk -v p="$forker" '$2 == p && $4 == "vmlinux:sched_process_fork" { k++ } END { print k + 0 }' /tmp/ktrace.out)
[ $st = 0 ] && [ "$got" = 20 ]
tap $? "sched_process_fork armed: 20 events for the 20 forks of one shell" \
	"status $st, $got of pid $forker among $(wc -l </tmp/ktrace.out): $(head -3 /tmp/ktrace.out) / $(cat /tmp/ktrace.err)"

djp list -k 'vmlinux:*' | awk '$3 != "off" || $4 != 0 { bad++ } END { exit bad + 0 }'
tap $? "after djp trace -k ends, no image marker is armed" "$(djp list -k 'vmlinux:*' | awk '$3 != "off"')"
