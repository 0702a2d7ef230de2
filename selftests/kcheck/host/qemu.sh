#!/bin/sh
# Boots the kcheck guest once and keeps its serial console in LOG.
#
# KVM when /dev/kvm can be opened for reading and writing (KVM=0 forces
# TCG, to check the path a machine without KVM takes); TCG otherwise.  The
# guest powers itself off; a guest that hangs is killed after TIMEOUT
# seconds, and a panic reboots, which -no-reboot turns into an exit: the
# host never waits on a guest for ever.  The exit status is QEMU's (124 on
# the timeout); whether the tests passed is for the console's reader to say.
# Usage: qemu.sh BZIMAGE INITRD LOG TIMEOUT SMP [KERNEL-ARG...]
bzimage=$1 initrd=$2 log=$3 timeout=$4 smp=$5
shift 5
for f in "$bzimage" "$initrd"; do
	[ -f "$f" ] || { echo "qemu.sh: no such file '$f'" >&2; exit 2; }
done
if [ "${KVM:-1}" != 0 ] && [ -r /dev/kvm ] && [ -w /dev/kvm ]; then
	accel="-accel kvm -cpu host"
else
	accel="-accel tcg -cpu max"
fi
# The first line of the log says how the guest ran: a figure from TCG is
# an emulator's, not a CPU's.
echo "kcheck: booting $(basename "$bzimage") with $smp CPUs, ${accel%% -cpu*}, timeout ${timeout} s" | tee "$log" >&2
# shellcheck disable=SC2086 # $accel is two options
timeout -k 5 "$timeout" qemu-system-x86_64 $accel -smp "$smp" -m 1G -nographic -no-reboot \
	-kernel "$bzimage" -initrd "$initrd" \
	-append "console=ttyS0 panic=-1 oops=panic quiet $*" </dev/null >>"$log" 2>&1
