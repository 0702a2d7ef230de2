#!/bin/sh
# The debug kernel for make kcheck KERNEL=debug: Debian's 6.1 source and
# config with the checkers that catch what a stock kernel lets pass: KASAN
# (an out-of-bounds or use-after-free access by the engine or a handler),
# lockdep (a lock order that can deadlock, a lock taken in the wrong
# context) and DEBUG_ATOMIC_SLEEP (sleeping with preemption off, which a
# handler or the patcher must never do).
#
# The source is unpacked from linux-source-6.1 into DIR/src and built out of
# tree into DIR/obj (O=), so neither the package nor the worktree receives
# objects.  Debian builds some 4,000 modules; the guest loads only ours, so
# every "=m" option is switched off, which leaves vmlinux and an empty
# Module.symvers for external modules to link against.  Debian's config names
# signing keys from its packaging tree: they are cleared.  A finished build
# leaves DIR/obj/.kcheck-built and is not redone.
# Usage: kernel-debug.sh DIR DEBIAN_CONFIG
set -e
dir=$1
config=$2
[ -f "$config" ] || { echo "kernel-debug.sh: no kernel config at '$config'" >&2; exit 1; }
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
[ -f "$dir/obj/.kcheck-built" ] && exit 0
# What building a kernel takes beyond building a module.
"$(dirname "$0")/../../../tools/check-deps.sh" flex bison bc libssl-dev libelf-dev

if [ ! -f "$dir/src/Makefile" ]; then
	deb=$(ls "$dir"/linux-source-6.1_*_all.deb 2>/dev/null | head -n 1)
	if [ -z "$deb" ]; then
		echo "kcheck: downloading linux-source-6.1" >&2
		(cd "$dir" && apt-get download -q -o APT::Sandbox::User=root linux-source-6.1 >/dev/null)
		deb=$(ls "$dir"/linux-source-6.1_*_all.deb | head -n 1)
	fi
	rm -rf "$dir/pkg" "$dir/src"
	dpkg-deb -x "$deb" "$dir/pkg"
	mkdir -p "$dir/src"
	tar -xaf "$dir"/pkg/usr/src/linux-source-6.1.tar.* -C "$dir/src" --strip-components=1
	rm -rf "$dir/pkg"
fi

mkdir -p "$dir/obj"
sed -e 's/^\(CONFIG_[A-Za-z0-9_]*\)=m$/# \1 is not set/' "$config" >"$dir/obj/.config"
cfg() { "$dir/src/scripts/config" --file "$dir/obj/.config" "$@"; }
cfg --enable KASAN --enable KASAN_GENERIC --enable KASAN_INLINE \
	--enable PROVE_LOCKING --enable DEBUG_LOCKDEP --enable DEBUG_ATOMIC_SLEEP \
	--enable DEBUG_KERNEL --enable MODULES \
	--disable DEBUG_INFO_BTF --disable DEBUG_INFO_DWARF5 --disable DEBUG_INFO_DWARF_TOOLCHAIN_DEFAULT \
	--enable DEBUG_INFO_NONE --disable MODULE_SIG_ALL \
	--set-str SYSTEM_TRUSTED_KEYS "" --set-str SYSTEM_REVOCATION_KEYS "" \
	--set-str MODULE_SIG_KEY "certs/signing_key.pem"
make -s -C "$dir/src" O="$dir/obj" olddefconfig
for opt in KASAN PROVE_LOCKING DEBUG_ATOMIC_SLEEP; do
	grep -q "^CONFIG_$opt=y" "$dir/obj/.config" ||
		{ echo "kernel-debug.sh: CONFIG_$opt did not survive olddefconfig" >&2; exit 1; }
done
echo "kcheck: building the debug kernel in $dir/obj (about an hour on 2 cores)" >&2
make -s -C "$dir/src" O="$dir/obj" -j"$(nproc)" bzImage modules
touch "$dir/obj/.kcheck-built"
