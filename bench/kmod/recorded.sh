#!/bin/sh
# The kbench guest's recorded rows (make kbench): a marker's event recorded
# by `djp trace -k` against a tracepoint's trace event written into
# ftrace's ring buffer, in djp_kbench.ko's `recorded` parameter.  Both have a
# reader draining their rings while the loops run (djp trace itself; a cat of
# trace_pipe), and rings large enough for every event of the run (32 MiB per
# CPU each: djprobe.ko's dev_ring_kb, set by /init, and ftrace's
# buffer_size_kb), so neither side gets cheaper by dropping or overwriting:
# the lost and overrun counts are printed as rows, and must be 0.
# Runs in the kbench guest after djp_kbench.ko's own rows; prints lines the
# host's bench/kmod/table.sh reads ("djp_kbench: row ..." and "# ...").
say() { echo "djp_kbench: # $*"; }
row() { echo "djp_kbench: row $*"; }
tr=/sys/kernel/tracing
[ -d $tr/events ] || mount -t tracefs nodev $tr 2>/dev/null
[ -d $tr/events/djp_kbench ] || { row "recorded marker / trace event | no tracefs events at $tr/events/djp_kbench | - | error"; exit 1; }
echo 32768 >$tr/buffer_size_kb
echo 1 >$tr/events/djp_kbench/kb_tp_event/enable
cat $tr/trace_pipe >/dev/null &
reader=$!
djp trace -k djp_kbench:kb_rec >/dev/null 2>/tmp/rec.err &
tracer=$!
i=0
until djp list -k djp_kbench:kb_rec 2>/dev/null | awk '$4 > 0 { ok = 1 } END { exit !ok }'; do
	i=$((i + 1))
	[ $i -lt 300 ] || break
	sleep 0.1
done
echo 1 >/sys/module/djp_kbench/parameters/recorded
kill -TERM $tracer
wait $tracer
echo 0 >$tr/events/djp_kbench/kb_tp_event/enable
kill $reader
wait $reader 2>/dev/null
say "djp trace -k: $(grep ' kernel: ' /tmp/rec.err | head -n 1)"
lost=$(sed -n 's/.* kernel: [0-9]* events, \([0-9]*\) lost.*/\1/p' /tmp/rec.err | head -n 1)
overrun=$(cat $tr/per_cpu/cpu*/stats | awk '/^overrun:/ { s += $2 } END { print s + 0 }')
row "events djp trace -k lost | ${lost:-?} | 0 | $([ "$lost" = 0 ] && echo ok || echo error)"
row "events ftrace overwrote | $overrun | 0 | $([ "$overrun" = 0 ] && echo ok || echo error)"
