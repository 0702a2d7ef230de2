#!/bin/sh
# Guest test: function points through kprobes (kmod/kfunc.c), with djp
# trace -k func:NAME and scripts' kernel.function("NAME")[.return].
#
# Writing N to djp_kselftest's parameter "kfunc" (selftests/kmod/kfunc.c)
# calls djp_ks_kfunc(i, 1001, 1002, 1003, 1004, 1005) for i = 1..N in the
# writer's task, each returning 2i + 1, and nothing else calls it; then
# djp_ks_kparms(-i, 200, -300, "djp", -1234567890123 * i, i & 1), returning
# -i.  Their parameters are named from the module's DWARF (/init puts the
# modules under /lib/modules/RELEASE, where an installed module is).  A
# tracefs kprobe and kretprobe on the same function are enabled around the
# whole run, so kprobe_profile counts the same hits djp must record.  The
# tool is known to be connected when `djp list -k` shows the function point
# with its probe (the device lists them beside the markers).
# Prints TAP lines; runs inside the kcheck guest as root, with djprobe.ko
# and djp_kselftest.ko loaded by /init.
ctl=/sys/module/djp_kselftest/parameters/kfunc
fn=djp_ks_kfunc
T=/sys/kernel/tracing
. "$(dirname "$0")/tap.inc" # tap, wait_probe
echo "1..15"

[ -e $T/kprobe_events ] || mount -t tracefs nodev $T
echo "p:kprobes/djpkf $fn" >$T/kprobe_events && echo "r:kprobes/djpkfr $fn" >>$T/kprobe_events &&
	echo 1 >$T/events/kprobes/djpkf/enable && echo 1 >$T/events/kprobes/djpkfr/enable
tap $? "tracefs kprobe and kretprobe on $fn, for kprobe_profile"
# hits of tracefs probe $1 so far
profile() {
	awk -v p="$1" '$1 == p { print $2 }' $T/kprobe_profile
}

# --- djp trace -k func:NAME and func:NAME%return: every call, its arguments
# and its return value ----------------------------------------------------
djp trace -k func:$fn "func:$fn%return" >/tmp/kf.out 2>/tmp/kf.err &
pid=$!
wait_probe "kernel:func:$fn" && wait_probe "kernel:func:$fn%return"
tap $? "djp trace -k func:$fn func:$fn%return connects" "$(cat /tmp/kf.err)"
echo 50 >$ctl
kill -TERM $pid
wait $pid
st=$?
ent=$(grep -c " kernel:func:$fn a=[0-9]* b=1001 c=1002 d=1003 e=1004 f=1005$" /tmp/kf.out)
ret=$(grep -c " kernel:func:$fn%return return=[0-9]*$" /tmp/kf.out)
[ $st = 0 ] && [ "$ent" = 50 ] && [ "$ret" = 50 ] && [ "$(wc -l </tmp/kf.out)" = 100 ]
tap $? "djp trace -k: 50 calls, 50 returns, one line each, parameters b-f named and right" \
	"status $st, $ent entries and $ret returns of $(wc -l </tmp/kf.out): $(head -2 /tmp/kf.out) / $(cat /tmp/kf.err)"
# in call order: call i has arg1 = i and returns 2i + 1 (printf reads 0x)
i=0 bad=0
for a in $(grep " kernel:func:$fn a=" /tmp/kf.out | sed 's/.* a=\([0-9]*\) .*/\1/'); do
	i=$((i + 1))
	[ $((a)) = $i ] || bad=$((bad + 1))
done
i=0
for r in $(grep " kernel:func:$fn%return " /tmp/kf.out | sed 's/.* return=//'); do
	i=$((i + 1))
	[ $((r)) = $((2 * i + 1)) ] || bad=$((bad + 1))
done
[ $bad = 0 ] && [ $i = 50 ]
tap $? "djp trace -k: a is 1..50 in order, each return 2i+1" "$bad wrong: $(grep -m3 " a=" /tmp/kf.out)"
hits=$(profile djpkf) rhits=$(profile djpkfr)
grep -q "kernel:func:$fn  *$hits\$" /tmp/kf.err && grep -q "kernel:func:$fn%return  *$rhits\$" /tmp/kf.err &&
	[ "$hits" = 50 ] && [ "$rhits" = 50 ]
tap $? "djp trace -k's counts equal kprobe_profile's (50 and 50)" "kprobe_profile: $hits, $rhits; djp: $(cat /tmp/kf.err)"

# --- scripts: kernel.function("NAME") and .return -------------------------
djp -e 'global n, sa, bad, r
probe kernel.function("djp_ks_kfunc") {
	n++; sa += $arg1
	if ($arg2 != 1001 || $arg3 != 1002 || $arg4 != 1003 || $arg5 != 1004 || $arg6 != 1005 || pid() != tid())
		bad++
}
probe kernel.function("djp_ks_kfunc").return { r += $return }
probe end { printf("%d %d %d %d\n", n, sa, bad, r) }' >/tmp/kfs.out 2>/tmp/kfs.err &
pid=$!
wait_probe "kernel:func:$fn" && wait_probe "kernel:func:$fn%return"
echo 40 >$ctl
kill -TERM $pid
wait $pid
st=$?
# 40 calls: arg1 sums to 820, returns (2i + 1) to 1680
[ $st = 0 ] && [ "$(cat /tmp/kfs.out)" = "40 820 0 1680" ] && [ "$(profile djpkf)" = 90 ] &&
	[ "$(profile djpkfr)" = 90 ]
tap $? "djp -e 'probe kernel.function(...)' and .return: 40 calls, \$arg1..\$arg6 and \$return right" \
	"status $st, output '$(cat /tmp/kfs.out)', kprobe_profile $(profile djpkf) $(profile djpkfr): $(cat /tmp/kfs.err)"

# --- kernel.statement("NAME+OFF") and .call: kprobes at an offset -------
djp -e 'global s, c
probe kernel.statement("djp_ks_kfunc+0") { s += $arg1 }
probe kernel.function("djp_ks_kfunc").call { c++ }
probe end { printf("%d %d\n", s, c) }' >/tmp/kfst.out 2>/tmp/kfst.err &
pid=$!
wait_probe "kernel:func:$fn+0" && wait_probe "kernel:func:$fn"
echo 10 >$ctl
kill -TERM $pid
wait $pid
st=$?
[ $st = 0 ] && [ "$(cat /tmp/kfst.out)" = "55 10" ]
tap $? "kernel.statement(\"NAME+0\") and kernel.function(\"NAME\").call: 10 calls, \$arg1 summing to 55" \
	"status $st, output '$(cat /tmp/kfst.out)': $(cat /tmp/kfst.err)"

# --- parameters by name, of every width and sign (the module's DWARF) ----
kp=djp_ks_kparms
djp trace -k func:$kp "func:$kp%return" >/tmp/kp.out 2>/tmp/kp.err &
pid=$!
wait_probe "kernel:func:$kp" && wait_probe "kernel:func:$kp%return"
echo 5 >$ctl
kill -TERM $pid
wait $pid
st=$?
bad=0
for i in 1 2 3 4 5; do
	grep -q " kernel:func:$kp neg=-$i small=200 sh=-300 name=0x[0-9a-f]* big=$((-1234567890123 * i)) flag=$((i % 2))\$" /tmp/kp.out &&
		grep -q " kernel:func:$kp%return return=-$i\$" /tmp/kp.out || bad=$((bad + 1))
done
[ $st = 0 ] && [ $bad = 0 ] && [ "$(wc -l </tmp/kp.out)" = 10 ]
tap $? "djp trace -k func:$kp: fields named as its parameters, narrow ones cut and extended by sign, return -i" \
	"status $st, $bad calls wrong: $(head -4 /tmp/kp.out) / $(cat /tmp/kp.err)"

djp -e 'global n, s, bad, r
probe kernel.function("djp_ks_kparms") {
	n++; s += $neg
	if ($small != 200 || $sh != -300 || $big != 1234567890123 * $neg || $flag != -$neg % 2 || $arg1 != $neg)
		bad++
}
probe kernel.function("djp_ks_kparms").return { r += $return }
probe end { printf("%d %d %d %d\n", n, s, bad, r) }' >/tmp/kps.out 2>/tmp/kps.err &
pid=$!
wait_probe "kernel:func:$kp" && wait_probe "kernel:func:$kp%return"
echo 6 >$ctl
kill -TERM $pid
wait $pid
st=$?
[ $st = 0 ] && [ "$(cat /tmp/kps.out)" = "6 -21 0 -21" ]
tap $? "a script's \$neg \$small \$sh \$big \$flag at kernel.function, and \$return: 6 calls right" \
	"status $st, output '$(cat /tmp/kps.out)': $(cat /tmp/kps.err)"

out=$(djp -e 'probe kernel.function("djp_ks_kparms") { print($nosuch) }' 2>&1)
st=$?
[ $st = 1 ] && echo "$out" | head -1 | grep -q "^<input>:1:48: semantic error: '\$nosuch' in probe point kernel.function(\"djp_ks_kparms\"): the function has no such parameter in registers (it has: \$neg \$small \$sh \$name \$big \$flag)"
tap $? "a parameter the function does not have: an error at its column listing those it has, status 1" "status $st: $out"

# The image's own functions: by name where its vmlinux is installed (the
# marked kernel's, which make kcheck KERNEL=marked puts where a debug
# package would), else an error that says what to install.
if [ -e "/usr/lib/debug/boot/vmlinux-$(uname -r)" ]; then
	djp -e 'probe kernel.function("vfs_read") { printf("%d %d %d\n", pid(), $count, $arg3) }' >/tmp/kv.out 2>/tmp/kv.err &
	pid=$!
	# the image's DWARF is read first: seconds under emulation
	for i in 1 2 3 4; do wait_probe "kernel:func:vfs_read" && break; done
	sh -c 'echo $$ >/tmp/ddpid; exec dd if=/dev/zero of=/dev/null bs=1234 count=3 2>/dev/null'
	kill -TERM $pid
	wait $pid
	st=$?
	got=$(awk -v p="$(cat /tmp/ddpid)" '$1 == p && $2 == 1234 && $3 == 1234 { k++ } END { print k + 0 }' /tmp/kv.out)
	[ $st = 0 ] && [ "$got" = 3 ]
	tap $? "\$count at kernel.function(\"vfs_read\") from the image's vmlinux: dd's 3 reads of 1234 bytes" \
		"status $st, $got of pid $(cat /tmp/ddpid): $(grep -m3 " 1234 " /tmp/kv.out) / $(head -c 600 /tmp/kv.err)"
else
	out=$(djp -e 'probe kernel.function("vfs_read") { print($count) }' 2>&1)
	st=$?
	[ $st = 1 ] && echo "$out" | grep -q "'\$count' in probe point kernel.function(\"vfs_read\"): no debug information for the kernel .*: use \$arg1..\$arg6"
	tap $? "a parameter of the image without its vmlinux: an error saying what to install, status 1" "status $st: $out"
fi
out=$(djp -e 'probe kernel.function("djp_ks_kparms").return { print($neg) }' 2>&1)
st=$?
[ $st = 1 ] && echo "$out" | grep -q "not supported yet: '\$neg' at a .return point"
tap $? "a parameter at a .return: an error, status 1" "status $st: $out"

# --- a function that does not exist: one line, status 1 -------------------
out=$(djp trace -k func:djp_no_such_function 2>&1)
st=$?
[ $st = 1 ] && [ "$out" = "djp: trace -k: kernel function 'djp_no_such_function': no such function" ]
tap $? "djp trace -k func:NAME of no function: one line naming it, status 1" "status $st: $out"
out=$(djp -e 'probe kernel.function("djp_no_such_function") { }' 2>&1)
st=$?
[ $st = 1 ] && [ "$(echo "$out" | wc -l)" = 1 ] && echo "$out" | grep -q "kernel function 'djp_no_such_function': no such function"
tap $? "a script's kernel.function of no function: one line naming it, status 1" "status $st: $out"

# --- nothing left behind --------------------------------------------------
echo 0 >$T/events/kprobes/djpkf/enable && echo 0 >$T/events/kprobes/djpkfr/enable && echo >$T/kprobe_events
djp list -k "kernel:func:*" >/tmp/kfl.out 2>&1
[ ! -s /tmp/kfl.out ] || grep -q "no loaded module has a marker" /tmp/kfl.out
l1=$?
grep -q $fn /sys/kernel/debug/kprobes/list
l2=$?
[ $l1 = 0 ] && [ $l2 = 1 ]
tap $? "after djp ends, no function point is listed and no kprobe is left" \
	"$(cat /tmp/kfl.out) / $(cat /sys/kernel/debug/kprobes/list)"
