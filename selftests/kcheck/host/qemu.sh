#!/bin/sh
# Boots the kcheck guest once and keeps its serial console in LOG.
#
# KVM or TCG.  /dev/kvm that opens is not enough: under nested
# virtualisation it may open and still not run this guest (`-cpu host`
# aborts QEMU on a model-specific register the host CPU reports but the
# outer hypervisor refuses, ARCH_CAPABILITIES, "failed to set MSR 0x10a";
# without that feature the firmware hangs).  So a probe boot decides: the
# guest kernel alone, under KVM, must print its banner ("Linux version")
# on the console within KVM_PROBE_TIMEOUT seconds (10); QEMU is then
# stopped.  Otherwise the guest runs under TCG.  One line says which and
# why.  KVM=0 forces TCG (the path a machine without KVM takes);
# KVM_PROBE_FAIL=1 makes the probe boot fail (its fallback, on a machine
# where KVM works).
#
# The guest powers itself off; a guest that hangs is killed after TIMEOUT
# seconds, and a panic reboots, which -no-reboot turns into an exit: the
# host never waits on a guest for ever.  The exit status is QEMU's (124 on
# the timeout); whether the tests passed is for the console's reader to say.
# Usage: qemu.sh BZIMAGE INITRD LOG TIMEOUT SMP [KERNEL-ARG...]
bzimage=$1 initrd=$2 log=$3 timeout=$4 smp=$5
shift 5
for f in "$bzimage" "$initrd"; do
	[ -f "$f" ] || { echo "qemu.sh: no such file '$f'" >&2; exit 2; }
done

# kvm_probe PROBELOG: 0 when the guest kernel printed its banner under KVM
# within KVM_PROBE_TIMEOUT seconds; `why` says what happened either way.
kvm_probe() {
	limit=${KVM_PROBE_TIMEOUT:-10}
	if [ "${KVM_PROBE_FAIL:-0}" = 1 ]; then
		why="the probe boot was made to fail (KVM_PROBE_FAIL=1)"
		return 1
	fi
	qemu-system-x86_64 -accel kvm -cpu host -smp 1 -m 256M -nographic -no-reboot \
		-kernel "$bzimage" -append "console=ttyS0 panic=-1" </dev/null >"$1" 2>&1 &
	qpid=$!
	tenths=0
	while [ $tenths -lt $((limit * 10)) ]; do
		if grep -q "Linux version" "$1"; then
			kill "$qpid" 2>/dev/null
			wait "$qpid" 2>/dev/null
			why="the guest kernel printed its banner under KVM in $((tenths / 10)).$((tenths % 10)) s"
			return 0
		fi
		kill -0 "$qpid" 2>/dev/null || break
		sleep 0.1
		tenths=$((tenths + 1))
	done
	if kill -0 "$qpid" 2>/dev/null; then
		kill "$qpid" 2>/dev/null
		wait "$qpid" 2>/dev/null
		why="/dev/kvm opens, but the guest kernel printed no banner under KVM within $limit s"
	else
		wait "$qpid"
		why="/dev/kvm opens, but QEMU under KVM exited with status $? before the guest kernel's banner:\
 $(grep -v '^$' "$1" | tail -n 1)"
	fi
	return 1
}

if [ "${KVM:-1}" = 0 ]; then
	accel="-accel tcg -cpu max" why="KVM=0"
elif ! [ -r /dev/kvm ] || ! [ -w /dev/kvm ]; then
	accel="-accel tcg -cpu max" why="/dev/kvm cannot be opened for reading and writing"
elif kvm_probe "$log.kvm-probe"; then
	accel="-accel kvm -cpu host"
else
	accel="-accel tcg -cpu max"
fi
rm -f "$log.kvm-probe"
echo "kcheck: ${accel%% -cpu*}: $why" >&2
# The first line of the log says how the guest ran: a figure from TCG is
# an emulator's, not a CPU's.
echo "kcheck: booting $(basename "$bzimage") with $smp CPUs, ${accel%% -cpu*}, timeout ${timeout} s" | tee "$log" >&2
# shellcheck disable=SC2086 # $accel is two options
timeout -k 5 "$timeout" qemu-system-x86_64 $accel -smp "$smp" -m 1G -nographic -no-reboot \
	-kernel "$bzimage" -initrd "$initrd" \
	-append "console=ttyS0 panic=-1 oops=panic quiet $*" </dev/null >>"$log" 2>&1
