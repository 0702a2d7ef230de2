#!/bin/sh
# djprobe-dkms unpacked into an empty root, and djprobe.ko built by dkms
# from that source alone (no link out of it) against Debian 12's kernel
# headers, the ones make kcheck builds against (kcheck/host/kernel.sh),
# in a DKMS tree of its own (--dkmstree): /var/lib/dkms and /lib/modules
# are not touched, and no signing key is made (sign_file names no file).
# Prints "dkms: ok" or one line naming what differed, and exits non-zero.
# Usage: dkms.sh DEBDIR SRCDIR KCHECKDIR WORKDIR
set -u
debdir=$1
src=$2
kcheck=$3
work=$4
fail() { echo "dkms: $*"; exit 1; }

# (what kernel.sh says while it fetches the headers is not this script's
# one line: it is kept for a failure)
klog=$(mktemp) || fail "cannot make a temporary file"
env=$("$src/selftests/kcheck/host/kernel.sh" "$kcheck" stock 2>"$klog") || {
	msg=$(tail -n 1 "$klog"); rm -f "$klog"
	fail "kernel.sh found no Debian kernel headers: $msg"
}
rm -f "$klog"
kdir=$(echo "$env" | sed -n 's/^KDIR=//p')
abi=${kdir##*/linux-headers-}
[ -d "$kdir" ] && [ -n "$abi" ] || fail "no kernel headers at '$kdir'"

rm -rf "$work" && mkdir -p "$work/root" "$work/tree" || fail "cannot make $work"
deb=$(ls "$debdir"/djprobe-dkms_*_all.deb 2>/dev/null | head -n 1)
[ -n "$deb" ] || fail "no djprobe-dkms_*_all.deb in $debdir (make deb)"
dpkg-deb -x "$deb" "$work/root" || fail "dpkg-deb -x $deb failed"
conf=$(ls "$work"/root/usr/src/djprobe-*/dkms.conf 2>/dev/null | head -n 1)
[ -n "$conf" ] || fail "djprobe-dkms has no /usr/src/djprobe-VERSION/dkms.conf"
srcdir=${conf%/dkms.conf}
version=${srcdir##*/djprobe-}
links=$(find "$srcdir" -type l)
[ -z "$links" ] || fail "the DKMS source has links: $links"

sign_file=/nonexistent dkms build -m djprobe -v "$version" -k "$abi" \
	--sourcetree "$work/root/usr/src" --dkmstree "$work/tree" --kernelsourcedir "$kdir" >"$work/dkms.log" 2>&1 || {
	log=$work/tree/djprobe/$version/build/make.log
	fail "dkms build failed: $(grep -s -m 1 'error' "$log" || tail -n 1 "$work/dkms.log") (in $log)"
}
ko=$work/tree/djprobe/$version/$abi/x86_64/module/djprobe.ko
[ -f "$ko" ] || fail "dkms build made no $ko"
vermagic=$(modinfo -F vermagic "$ko")
case $vermagic in
"$abi "*) ;;
*) fail "djprobe.ko's vermagic is '$vermagic', not $abi's" ;;
esac
[ "$(modinfo -F name "$ko")" = djprobe ] || fail "the module built is not named djprobe"

rm -rf "$work"
echo "dkms: ok"
