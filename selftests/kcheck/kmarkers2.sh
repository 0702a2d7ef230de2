#!/bin/sh
# Guest test: markers of a module loaded and unloaded again and again while
# a probe on them stays connected (djp_kselftest.ko's reload.c says how it
# counts).  Each load of djp_kmarkers2.ko with passes=P runs each of its 8
# markers P times in init and P times in exit, so every load must add
# exactly 2P hits to every marker: arming must come before init runs and
# disarming after exit, for jumps and for the kprobe fallback alike.
ctl=/sys/module/djp_kselftest/parameters/reload
ko=/kmod/djp_kmarkers2.ko
loads=5
. "$(dirname "$0")/tap.inc" # tap
echo "1..$((2 * (loads + 2)))"
for how in jump kprobe; do
	connect="connect"
	[ $how = kprobe ] && connect="connect kprobe"
	# djp_connect wants a marker to match: the first load is silent.
	insmod $ko passes=0 && echo "$connect" >$ctl && rmmod djp_kmarkers2 && echo "expect 0" >$ctl
	tap $? "$how: probe on djp_kmarkers2:* connected"
	i=1
	while [ $i -le $loads ]; do
		p=$((i * 7))
		insmod $ko passes=$p && rmmod djp_kmarkers2 && echo "expect $((2 * p))" >$ctl
		tap $? "$how: load $i, passes=$p: every marker hit $((2 * p)) times"
		rmmod djp_kmarkers2 2>/dev/null
		i=$((i + 1))
	done
	echo disconnect >$ctl
	tap $? "$how: disconnected"
done
