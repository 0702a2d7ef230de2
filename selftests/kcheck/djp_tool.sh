#!/bin/sh
# Guest test: the djp tool on kernel markers, through /dev/djprobe.
#
# djp_kmarkers2.ko (selftests/kmod/djp_kmarkers2.c) runs each of its eight
# markers km2_site_0..7 `passes` times when it loads and again when it
# unloads, so a load and an unload with passes=P are exactly 2P hits of
# each, made by insmod's and rmmod's tasks.  Probes are connected while a
# silent copy (passes=0) is loaded, since a pattern must match a marker
# when it is connected; the counted load comes after, so the probes must
# also cover a module loaded later.  The tool is known to be connected
# when `djp list -k` shows the probe on the site (its PROBES column).
# Prints TAP lines; runs inside the kcheck guest as root, with djprobe.ko
# loaded by /init.
ko=/kmod/djp_kmarkers2.ko
. "$(dirname "$0")/tap.inc" # tap, wait_probe
# load and unload once with passes=$1
cycle() {
	insmod $ko passes="$1" && rmmod djp_kmarkers2
}
echo "1..14"

# --- without a device or as another user: one line each ---------------
out=$(DJP_KDEV=/dev/nonexistent djp list -k 2>&1)
st=$?
[ $st = 1 ] && [ "$out" = "djp: list -k: djprobe.ko is not loaded (no /dev/nonexistent)" ]
tap $? "djp list -k without the device: one line, status 1" "status $st: $out"

# --- djp list -k --------------------------------------------------------
insmod $ko passes=0
list=$(djp list -k 'djp_kmarkers2:*' 2>&1)
cnt=$(echo "$list" | grep -c '^djp_kmarkers2:km2_site_[0-7]  0xffffffff[0-9a-f]*  off  0  "site=%u pass=%u"')
[ "$cnt" = 8 ]
tap $? "djp list -k shows the 8 markers of djp_kmarkers2, off" "$list"
djp list -k --json 'djp_kmarkers2:km2_site_5' | grep -q '"module":"djp_kmarkers2","name":"km2_site_5","address":"0xffffffff'
tap $? "djp list -k --json names module, marker and address"

# --- djp trace -k: N events for N hits -----------------------------------
djp trace -k 'djp_kmarkers2:km2_site_3' >/tmp/trace.out 2>/tmp/trace.err &
pid=$!
wait_probe djp_kmarkers2:km2_site_3
tap $? "djp trace -k connects (djp list -k shows its probe)" "$(cat /tmp/trace.err)"
rmmod djp_kmarkers2
cycle 7
kill -TERM $pid
wait $pid
st=$?
got=$(grep -c ' djp_kmarkers2:km2_site_3 site=3 pass=[0-6]$' /tmp/trace.out)
[ $st = 0 ] && [ "$got" = 14 ] && [ "$(wc -l </tmp/trace.out)" = 14 ]
tap $? "djp trace -k: 14 events for 14 hits, one line each" "status $st, $got matching of $(wc -l </tmp/trace.out): $(head -3 /tmp/trace.out) / $(cat /tmp/trace.err)"
# TIMESTAMP PID TID NAME: insmod's and rmmod's tasks, not 0
awk '$2 > 0 && $3 > 0 && $2 == $3 { k++ } END { exit k != 14 }' /tmp/trace.out
tap $? "djp trace -k: each event names its task (pid and tid of insmod, rmmod)" "$(head -2 /tmp/trace.out)"
grep -q ' kernel: 14 events, 0 lost' /tmp/trace.err
tap $? "djp trace -k: the summary counts 14 events, none lost" "$(cat /tmp/trace.err)"
insmod $ko passes=0
djp list -k 'djp_kmarkers2:*' | awk '$3 == "off" && $4 == 0 { k++ } END { exit k != 9 }'
tap $? "after djp trace -k ends, nothing is armed"

# --- the kprobe fallback: the same events, through an int3 trap ----------
djp trace -k --kprobe 'djp_kmarkers2:km2_site_4' >/tmp/ktrace.out 2>/tmp/ktrace.err &
pid=$!
wait_probe djp_kmarkers2:km2_site_4
how=$(djp list -k djp_kmarkers2:km2_site_4 | awk '{ print $3 }')
rmmod djp_kmarkers2
cycle 4
kill -TERM $pid
wait $pid
st=$?
got=$(grep -c ' djp_kmarkers2:km2_site_4 site=4 pass=[0-3]$' /tmp/ktrace.out)
[ $st = 0 ] && [ "$how" = kprobe ] && [ "$got" = 8 ] && [ "$(wc -l </tmp/ktrace.out)" = 8 ]
tap $? "djp trace -k --kprobe: armed as a kprobe, 8 events for 8 hits" \
	"status $st, armed '$how', $got of $(wc -l </tmp/ktrace.out): $(cat /tmp/ktrace.err)"
# the trap's NMI-like context is not the interrupt the hit was not in
awk '$2 > 0 && $2 == $3 { k++ } END { exit k != 8 }' /tmp/ktrace.out
tap $? "djp trace -k --kprobe: each event names its task, not 0" "$(head -2 /tmp/ktrace.out)"
insmod $ko passes=0

# --- CTF: the events of the text, read back by --from as they printed -----
djp trace -k -f text -o /tmp/kt.txt -f json -o /tmp/kt.json -f ctf -o /tmp/kt.ctf 'djp_kmarkers2:km2_site_2' \
	2>/tmp/kt.err &
pid=$!
wait_probe djp_kmarkers2:km2_site_2
rmmod djp_kmarkers2
cycle 3
kill -TERM $pid
wait $pid
st=$?
djp trace --from /tmp/kt.ctf -o /tmp/kb.txt 2>>/tmp/kt.err &&
	djp trace --from /tmp/kt.ctf -f json -o /tmp/kb.json 2>>/tmp/kt.err &&
	cmp /tmp/kt.txt /tmp/kb.txt && cmp /tmp/kt.json /tmp/kb.json && [ $st = 0 ] &&
	[ "$(grep -c ' djp_kmarkers2:km2_site_2 site=2 pass=[0-2]$' /tmp/kb.txt)" = 6 ] &&
	[ "$(grep -c '"cpu":[0-9]' /tmp/kb.json)" = 6 ]
tap $? "djp trace -k -f ctf: 6 events, which --from prints as the text and JSON did" \
	"status $st: $(head -3 /tmp/kt.txt) / $(head -3 /tmp/kb.txt) / $(cat /tmp/kt.err)"
insmod $ko passes=0

# --- scripts: kernel.mark and module(...).mark count exactly --------------
djp -e 'global n, ok
probe module("djp_kmarkers2").mark("km2_site_*") { n++ }
probe kernel.mark("km2_site_1") { if ($arg1 == 1 && $pass == $arg2 && pid() == tid() && pid() > 0) ok++ }
probe end { printf("%d %d\n", n, ok) }' >/tmp/script.out 2>/tmp/script.err &
pid=$!
wait_probe djp_kmarkers2:km2_site_1
rmmod djp_kmarkers2
cycle 5
cycle 3
kill -TERM $pid
wait $pid
st=$?
# 8 sites x (5 + 3) passes x 2 (load and unload); site 1 alone: 16
[ $st = 0 ] && [ "$(cat /tmp/script.out)" = "128 16" ]
tap $? "djp -e 'probe module(...).mark(...)' counts 128 hits exactly, kernel.mark's \$arg1 \$pass pid() right" \
	"status $st, output '$(cat /tmp/script.out)': $(cat /tmp/script.err)"
insmod $ko passes=0
djp list -k 'djp_kmarkers2:*' | awk '$3 == "off" && $4 == 0 { k++ } END { exit k != 9 }'
tap $? "after the script ends, nothing is armed"

# --- %s arguments: copied by the kernel's recorder when the marker hits,
# NULL said so, a string longer than 63 bytes cut there and marked "...",
# as djp trace marks a process's; --max-string-len cuts shorter ----------
djp trace -k 'djp_kmarkers2:km2_name' >/tmp/strace.out 2>/tmp/strace.err &
pid=$!
djp trace -k --max-string-len 8 'djp_kmarkers2:km2_name' >/tmp/strace8.out 2>/tmp/strace8.err &
pid8=$!
wait_probe djp_kmarkers2:km2_name
i=0
while [ $i -lt 300 ] && [ "$(djp list -k djp_kmarkers2:km2_name | awk '{ print $4 }')" != 2 ]; do
	sleep 0.1
	i=$((i + 1))
done
rmmod djp_kmarkers2
insmod $ko passes=0 names=3 && rmmod djp_kmarkers2
kill -TERM $pid $pid8
wait $pid
st=$?
wait $pid8
st8=$?
long=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde
[ $st = 0 ] && [ "$(wc -l </tmp/strace.out)" = 6 ] &&
	[ "$(grep -c ' djp_kmarkers2:km2_name mod=djp_kmarkers2 word=alpha pass=0$' /tmp/strace.out)" = 2 ] &&
	[ "$(grep -c ' djp_kmarkers2:km2_name mod=djp_kmarkers2 word=(null) pass=1$' /tmp/strace.out)" = 2 ] &&
	[ "$(grep -c " djp_kmarkers2:km2_name mod=djp_kmarkers2 word=$long\\.\\.\\. pass=2\$" /tmp/strace.out)" = 2 ] &&
	[ $st8 = 0 ] && [ "$(wc -l </tmp/strace8.out)" = 6 ] &&
	[ "$(grep -c ' djp_kmarkers2:km2_name mod=djp_kma\.\.\. word=alpha pass=0$' /tmp/strace8.out)" = 2 ] &&
	[ "$(grep -c ' djp_kmarkers2:km2_name mod=djp_kma\.\.\. word=(null) pass=1$' /tmp/strace8.out)" = 2 ] &&
	[ "$(grep -c ' djp_kmarkers2:km2_name mod=djp_kma\.\.\. word=0123456\.\.\. pass=2$' /tmp/strace8.out)" = 2 ]
tap $? "djp trace -k: %s arguments copied in the kernel, (null), cut at 63 bytes or --max-string-len with ..." \
	"status $st, $st8: $(cat /tmp/strace.out) / $(cat /tmp/strace.err) / $(cat /tmp/strace8.out)"
