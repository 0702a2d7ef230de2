#!/bin/sh
# djprobe.ko's sources as DKMS builds them, in DEST (/usr/src/djprobe-VERSION
# in djprobe-dkms): kmod/ as `make kmod` gives it to Kbuild (ktree.sh's
# links to kmod/'s files and to the user-space files kmod/Kbuild names,
# here copied), the headers those include (include/, lib/*.h, arch/x86/*.h,
# kernel/apply_steps.h, found by kmod/Kbuild at kmod/..); dh_dkms adds dkms.conf
# (debian/djprobe-dkms.dkms).
# Usage: debian/dkms-source.sh DEST   (from the project's root)
set -e
dest=$1
[ -n "$dest" ] || { echo "dkms-source.sh: usage: dkms-source.sh DEST" >&2; exit 2; }
links=$dest.links
rm -rf "$dest" "$links"
selftests/kcheck/host/ktree.sh kmod "$links"
mkdir -p "$dest/kmod" "$dest/lib" "$dest/arch/x86" "$dest/kernel"
cp -RL "$links"/. "$dest/kmod/"
rm -rf "$links"
cp -R include "$dest/"
cp lib/*.h "$dest/lib/"
cp arch/x86/*.h "$dest/arch/x86/"
cp kernel/apply_steps.h "$dest/kernel/"
find "$dest" -type d -exec chmod 755 {} + && find "$dest" -type f -exec chmod 644 {} +
