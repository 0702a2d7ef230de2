#!/bin/sh
# The guest's whole root file system, as a gzipped newc cpio archive.
#
# busybox-static is the shell and every command (/init installs its links at
# boot); kernel modules go to /kmod, guest test scripts to /tests with the
# *.inc files they source, a vmlinux.debug (the image's DWARF) to
# /kdebug/vmlinux, and any other file named is a program, copied to
# /bin with the shared libraries ldd says it loads, at the same paths (the
# loader too), so a dynamically linked djp runs as it does on the host.
# There is no cpio binary on this machine class: busybox's own cpio writes
# the archive.
# Usage: initramfs.sh OUT.cpio.gz INIT FILE...
set -e
out=$1
init=$2
shift 2
[ -f "$init" ] || { echo "initramfs.sh: no init script at '$init'" >&2; exit 1; }
bb=$(command -v busybox) || { echo "initramfs.sh: busybox is not installed (busybox-static)" >&2; exit 1; }
ldd "$bb" >/dev/null 2>&1 && { echo "initramfs.sh: $bb is dynamically linked: install busybox-static" >&2; exit 1; }

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/bin" "$root/kmod" "$root/tests" "$root/proc" "$root/sys" "$root/dev" "$root/tmp"
cp "$bb" "$root/bin/busybox"
cp "$init" "$root/init"
chmod 755 "$root/init"

for f in "$@"; do
	[ -f "$f" ] || { echo "initramfs.sh: no such file '$f'" >&2; exit 1; }
	case $f in
	*.ko) cp "$f" "$root/kmod/" ;;
	*.sh) cp "$f" "$root/tests/" ;;
	*.inc) cp "$f" "$root/tests/" ;; # what the scripts source
	*/vmlinux.debug) mkdir -p "$root/kdebug" && cp "$f" "$root/kdebug/vmlinux" ;; # the image's DWARF
	*)
		cp "$f" "$root/bin/"
		# "libx.so => /path (0x...)" and the loader's "/lib64/ld-linux... (0x...)"
		for lib in $(ldd "$f" 2>/dev/null | sed -n 's/.*=> \(\/[^ ]*\) .*/\1/p; s/^[[:space:]]*\(\/[^ ]*\) (.*/\1/p'); do
			mkdir -p "$root$(dirname "$lib")"
			cp -L "$lib" "$root$lib"
		done
		;;
	esac
done

(cd "$root" && find . | busybox cpio -o -H newc 2>/dev/null) | gzip -1 >"$out.tmp"
mv "$out.tmp" "$out"
