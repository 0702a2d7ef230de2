#!/bin/sh
# The marked kernel for make kcheck KERNEL=marked: Debian's linux-source-6.1
# with djprobe's patch series (kernel-patches/linux-6.1/*.patch, applied
# with patch -p1), built small for the QEMU guest.
#
# DIR/src is the patched source, DIR/obj the out-of-tree build (O=), so
# neither the package nor the worktree receives objects.  The config is
# tinyconfig plus the options of kernel-marked.config, then olddefconfig;
# each option must survive it.  A plain `make` (not only bzImage) so that
# obj/Module.symvers exists for djprobe.ko to build against.
#
# Reuse: src/.kcheck-series holds the checksum of the series it was made
# from.  A series that changed re-unpacks the source and applies it again;
# the unpacked files keep the tarball's times, so the kept objects stay
# valid and make rebuilds only what the patches touch.  The config is
# regenerated only when kernel-marked.config changed (obj/.kcheck-config
# holds its checksum).  A finished build
# leaves obj/.kcheck-built, which records the series' checksum too.
# Usage: kernel-marked.sh DIR PATCHDIR
set -e
dir=$1
patches=$2
here=$(cd "$(dirname "$0")" && pwd)
frag=$here/kernel-marked.config
[ -n "$dir" ] && [ -d "$patches" ] || { echo "kernel-marked.sh: usage: kernel-marked.sh DIR PATCHDIR" >&2; exit 2; }
ls "$patches"/*.patch >/dev/null 2>&1 || { echo "kernel-marked.sh: no patch series in '$patches'" >&2; exit 1; }
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
patches=$(cd "$patches" && pwd)
series=$(cat "$patches"/*.patch "$frag" | sha256sum | cut -d' ' -f1)
[ "$(cat "$dir/obj/.kcheck-built" 2>/dev/null)" = "$series" ] && exit 0
# What building a kernel takes beyond building a module.
"$here/../../../tools/check-deps.sh" flex bison bc libssl-dev libelf-dev patch xz-utils

if [ "$(cat "$dir/src/.kcheck-series" 2>/dev/null)" != "$(cat "$patches"/*.patch | sha256sum | cut -d' ' -f1)" ]; then
	tarball=$(ls /usr/src/linux-source-6.1.tar.* 2>/dev/null | head -n 1)
	if [ -z "$tarball" ]; then
		deb=$(ls "$dir"/linux-source-6.1_*_all.deb 2>/dev/null | head -n 1)
		if [ -z "$deb" ]; then
			echo "kcheck: downloading linux-source-6.1" >&2
			(cd "$dir" && apt-get download -q -o APT::Sandbox::User=root linux-source-6.1 >/dev/null)
			deb=$(ls "$dir"/linux-source-6.1_*_all.deb | head -n 1)
		fi
		rm -rf "$dir/pkg"
		dpkg-deb -x "$deb" "$dir/pkg"
		tarball=$(ls "$dir"/pkg/usr/src/linux-source-6.1.tar.* | head -n 1)
	fi
	echo "kcheck: unpacking $(basename "$tarball") and applying $(ls "$patches"/*.patch | wc -l) patches" >&2
	rm -rf "$dir/src.tmp"
	mkdir -p "$dir/src.tmp"
	tar -xaf "$tarball" -C "$dir/src.tmp" --strip-components=1
	rm -rf "$dir/pkg"
	for p in "$patches"/*.patch; do
		patch -s -p1 -d "$dir/src.tmp" <"$p" ||
			{ echo "kernel-marked.sh: $(basename "$p") does not apply to $(basename "$tarball")" >&2; exit 1; }
	done
	cat "$patches"/*.patch | sha256sum | cut -d' ' -f1 >"$dir/src.tmp/.kcheck-series"
	rm -rf "$dir/src"
	mv "$dir/src.tmp" "$dir/src"
fi

mkdir -p "$dir/obj"
opts=$(sed 's/#.*//' "$frag")
fragsum=$(sha256sum <"$frag" | cut -d' ' -f1)
if [ ! -f "$dir/obj/.config" ] || [ "$(cat "$dir/obj/.kcheck-config" 2>/dev/null)" != "$fragsum" ]; then
	make -s -C "$dir/src" O="$dir/obj" tinyconfig >/dev/null
	for o in $opts; do
		"$dir/src/scripts/config" --file "$dir/obj/.config" --enable "$o"
	done
	"$dir/src/scripts/config" --file "$dir/obj/.config" --disable SLOB --disable CC_OPTIMIZE_FOR_SIZE
	make -s -C "$dir/src" O="$dir/obj" olddefconfig
	echo "$fragsum" >"$dir/obj/.kcheck-config"
fi
for o in $opts; do
	grep -q "^CONFIG_$o=y" "$dir/obj/.config" ||
		{ echo "kernel-marked.sh: CONFIG_$o did not survive olddefconfig" >&2; exit 1; }
done
echo "kcheck: building the marked kernel in $dir/obj (from 10 minutes on 2 idle cores to half an hour under load, the first time)" >&2
start=$(date +%s)
make -s -C "$dir/src" O="$dir/obj" -j"$(nproc)"
echo "kcheck: the marked kernel built in $(($(date +%s) - start)) s" >&2
echo "$series" >"$dir/obj/.kcheck-built"
