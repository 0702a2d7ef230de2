#!/bin/sh
# The guest kernel for make kcheck, fetched and unpacked once into DIR.
#
# stock: Debian 12's current 6.1 ABI, resolved now rather than written
# down, because the security archive moves it (linux-headers-amd64 depends
# on linux-headers-6.1.0-N-amd64).  The headers are installed as a package
# (modules build against /usr/src/linux-headers-ABI); the image is only
# downloaded and unpacked (dpkg-deb -x), never installed: the host's own
# kernel and boot loader are not touched.
#
# debug: the same 6.1 built from linux-source-6.1 with Debian's config plus
# KASAN, lockdep and DEBUG_ATOMIC_SLEEP (kernel-debug.sh).
#
# marked: the same 6.1 with djprobe's patch series (kernel-patches/linux-6.1),
# MARK() sites in the image itself, built small for the guest, in DIR/marked
# (kernel-marked.sh).  It needs no Debian image.
#
# Prints two lines, "KDIR=..." and "BZIMAGE=...", for the Makefile.
# Usage: selftests/kcheck/host/kernel.sh DIR stock|debug|marked
set -e
dir=$1
kind=${2:-stock}
here=$(dirname "$0")
[ -n "$dir" ] || { echo "kernel.sh: usage: kernel.sh DIR stock|debug|marked" >&2; exit 2; }
mkdir -p "$dir"

if [ "$kind" = marked ]; then
	"$here/kernel-marked.sh" "$dir/marked" "$here/../../../kernel-patches/linux-6.1"
	echo "KDIR=$(cd "$dir/marked/obj" && pwd)"
	echo "BZIMAGE=$(cd "$dir/marked/obj" && pwd)/arch/x86/boot/bzImage"
	echo "VMLINUX=$(cd "$dir/marked/obj" && pwd)/vmlinux"
	exit 0
fi

abi=$(apt-cache depends linux-headers-amd64 2>/dev/null |
	sed -n 's/^ *Depends: linux-headers-\(6\.1\.[0-9]*-[0-9]*-amd64\)$/\1/p' | head -n 1)
if [ -z "$abi" ]; then
	echo "kcheck: cannot resolve Debian 12's kernel ABI: apt-cache depends linux-headers-amd64 names no linux-headers-6.1.0-N-amd64 (run apt-get update?)" >&2
	exit 1
fi

image=$dir/linux-image-$abi
if [ ! -f "$image/boot/vmlinuz-$abi" ]; then
	deb=$(ls "$dir"/linux-image-"$abi"_*_amd64.deb 2>/dev/null | head -n 1)
	if [ -z "$deb" ]; then
		echo "kcheck: downloading linux-image-$abi" >&2
		# As root into build/: apt's _apt user could not write there.
		(cd "$dir" && apt-get download -q -o APT::Sandbox::User=root "linux-image-$abi" >/dev/null)
		deb=$(ls "$dir"/linux-image-"$abi"_*_amd64.deb | head -n 1)
	fi
	rm -rf "$image.tmp"
	dpkg-deb -x "$deb" "$image.tmp"
	mv "$image.tmp" "$image"
fi

case $kind in
stock)
	"$here/../../../tools/check-deps.sh" "linux-headers-$abi"
	echo "KDIR=/usr/src/linux-headers-$abi"
	echo "BZIMAGE=$image/boot/vmlinuz-$abi"
	;;
debug)
	"$here/kernel-debug.sh" "$dir/debug" "$image/boot/config-$abi"
	echo "KDIR=$(cd "$dir/debug/obj" && pwd)"
	echo "BZIMAGE=$(cd "$dir/debug/obj" && pwd)/arch/x86/boot/bzImage"
	;;
*)
	echo "kernel.sh: unknown kernel '$kind' (stock, debug or marked)" >&2
	exit 2
	;;
esac
