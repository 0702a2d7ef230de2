#!/bin/sh
# Guest test: each marker of the kernel image against the tracepoint it sits
# beside, and vmlinux:sched_switch patched 10,000 times under load (make
# kcheck KERNEL=marked).
#
# djp_kimage.ko (selftests/kmod/kimage_cmp.c) connects a counting handler
# to vmlinux:NAME and a counting probe to the tracepoint NAME for each name
# below, all at once; this script opens its gate, runs the workload
# /bin/kimage_work (forks, execs, exits, faults, a contended pipe, block
# I/O on null_blk, UDP and TCP over loopback), closes the gate, and
# compares: each marker must have counted exactly what its tracepoint
# counted, and something.  The class says what is counted (the module's
# comment says why that makes the counts exact): "any" counts every hit
# while the gate is open, for pairs that run with interrupts or preemption
# off; "task" only the hits of the workload's tasks, for pairs in task
# context.  page_fault has no tracepoint beside it (the fault's
# tracepoints are in noinstr entry code, where no marker goes): its marker
# is the first thing handle_mm_fault() does on every call, so a kprobe on
# handle_mm_fault is its oracle.  The lock tracepoints are in every lock's
# slow path, their markers only in the mutex's: "tp:mutex" counts the
# tracepoints' mutex hits only.
#
# Then the stress (kimage_stress.c): vmlinux:sched_switch connected and
# disconnected 10,000 times while two threads per CPU yield in a loop;
# every image site must hold its NOP again, and every thread still run.
# On a kernel without the series, vmlinux:sched_switch must not connect.
# Prints TAP lines; runs inside the kcheck guest as root, with djprobe.ko
# loaded by /init.
marked=0
for arg in $(cat /proc/cmdline); do
	[ "$arg" = kcheck.marked=1 ] && marked=1
done
pairs="sched_switch:any:tp sched_wakeup:any:tp sched_process_fork:task:tp sched_process_exec:task:tp
sched_process_exit:task:tp page_fault:task:kprobe:handle_mm_fault kmalloc:task:tp kfree:task:tp
kmem_cache_alloc:task:tp irq_handler_entry:any:tp irq_handler_exit:any:tp timer_expire_entry:any:tp
block_rq_issue:task:tp block_rq_complete:task:tp net_dev_xmit:any:tp netif_receive_skb:any:tp
contention_begin:task:tp:mutex contention_end:task:tp:mutex"
cycles=10000
param=/sys/module/djp_kimage/parameters
. "$(dirname "$0")/tap.inc"

if [ $marked = 0 ]; then
	echo "1..1"
	insmod /kmod/djp_kimage.ko 2>/tmp/err &&
		! echo "sched_switch any tp" >$param/add 2>/dev/null
	tap $? "a kernel without the series: vmlinux:sched_switch does not connect" "$(cat /tmp/err)"
	rmmod djp_kimage 2>/dev/null
	exit 0
fi

echo "1..$(($(echo $pairs | wc -w) + 4))"
insmod /kmod/djp_kimage.ko 2>/tmp/err
tap $? "djp_kimage.ko loads" "$(cat /tmp/err)"

# Connect every pair, count over one run of the workload, compare.
failed=""
for p in $pairs; do
	name=${p%%:*}
	rest=${p#*:}
	echo "$name ${rest%%:*} ${rest#*:}" >$param/add 2>/tmp/err || failed="$failed $name($(cat /tmp/err))"
done
echo 1 >$param/gate
/bin/kimage_work 10 >/tmp/work.out 2>&1
work=$?
echo 0 >$param/gate
cat $param/counts >/tmp/counts
echo reset >$param/reset
[ $work = 0 ] || echo "# kimage_work failed ($work): $(cat /tmp/work.out)"
grep -q '^waiters-table-full' /tmp/counts && failed="$failed contention_begin(waiters-table-full) contention_end(waiters-table-full)"
for p in $pairs; do
	name=${p%%:*}
	rest=${p#*:}
	oracle=${rest#*:}
	case $oracle in
	tp) oracle="tracepoint $name" ;;
	tp:mutex) oracle="tracepoint $name on mutexes" ;;
	esac
	line=$(grep "^$name " /tmp/counts)
	set -- $line
	case " $failed " in *" $name("*) line="not connected:$failed" ;; esac
	[ $work = 0 ] && [ -n "$2" ] && [ "$2" = "$3" ] && [ "$2" -gt 0 ]
	tap $? "vmlinux:$name counts what its $oracle counts (${rest%%:*}): ${2:-?} and ${3:-?}" "$line"
done

echo $cycles >$param/stress 2>/tmp/err
st=$?
report=$(cat $param/stress_report)
[ $st = 0 ]
tap $? "vmlinux:sched_switch connected and disconnected $cycles times while every CPU schedules: text restored" \
	"$(cat /tmp/err) $report"
echo "# $report; the syncs' waits renewed the first bytes $(cat /sys/module/djprobe/parameters/sync_renewals) times (emulated: $(cat /sys/module/djprobe/parameters/emulated))"

djp list -k 'vmlinux:*' | awk '$3 != "off" || $4 != 0 { bad++ } END { exit bad + 0 }'
tap $? "after the comparison and the stress, no image marker is armed" "$(djp list -k 'vmlinux:*' | awk '$3 != "off"')"

rmmod djp_kimage 2>/tmp/err
tap $? "djp_kimage.ko unloads" "$(cat /tmp/err)"
