#!/bin/sh
# djprobe and libdjprobe-dev unpacked into an empty root (dpkg-deb -x, no
# dpkg database, nothing of the build tree on any path): a program is built
# against the packaged headers through pkg-config (PKG_CONFIG_SYSROOT_DIR
# and PKG_CONFIG_LIBDIR at the root), the root's djp lists its markers and
# traces it with -c (the agent it preloads is the root's libdjprobe.so.0,
# ../lib from djp), and a program linked with `pkg-config --libs djprobe`
# runs on the root's libdjprobe.so.  Prints "unpacked: ok" or one line
# naming what differed, and exits non-zero.
# Usage: unpacked.sh DEBDIR SRCDIR WORKDIR
set -u
debdir=$1
src=$2
work=$3
fail() { echo "unpacked: $*"; exit 1; }

rm -rf "$work" && mkdir -p "$work/root" || fail "cannot make $work"
root=$(cd "$work/root" && pwd)
for p in djprobe libdjprobe-dev; do
	deb=$(ls "$debdir"/${p}_*_amd64.deb 2>/dev/null | head -n 1)
	[ -n "$deb" ] || fail "no ${p}_*_amd64.deb in $debdir (make deb)"
	dpkg-deb -x "$deb" "$root" || fail "dpkg-deb -x $deb failed"
done
for f in usr/bin/djp usr/lib/libdjprobe.so.0 usr/lib/libdjprobe.so usr/lib/libdjprobe.a \
	usr/include/djprobe/marker.h usr/include/djprobe/djprobe.h usr/lib/pkgconfig/djprobe.pc \
	usr/share/man/man1/djp.1.gz usr/share/man/man3/djprobe.3.gz; do
	[ -e "$root/$f" ] || fail "the packages have no /$f"
done

export PKG_CONFIG_SYSROOT_DIR="$root" PKG_CONFIG_LIBDIR="$root/usr/lib/pkgconfig"
unset PKG_CONFIG_PATH DJP_PRELOAD LD_PRELOAD LD_LIBRARY_PATH
cflags=$(pkg-config --cflags djprobe) || fail "pkg-config --cflags djprobe failed"
libs=$(pkg-config --libs djprobe) || fail "pkg-config --libs djprobe failed"
[ "${cflags% }" = "-I$root/usr/include" ] || fail "pkg-config --cflags djprobe gave '$cflags'"

# The header the compiler took is the root's.
gcc $cflags -M "$src/selftests/deb/marked.c" | tr ' \\' '\n\n' | grep -qx "$root/usr/include/djprobe/marker.h" ||
	fail "marked.c did not include $root/usr/include/djprobe/marker.h"
gcc -std=gnu11 -O2 -Wall -Werror $cflags -o "$work/marked" "$src/selftests/deb/marked.c" || fail "cannot build marked.c"

out=$("$root/usr/bin/djp" list --no-header "$work/marked" 2>&1) || fail "djp list: $out"
names=$(echo "$out" | awk '{print $1}' | sort | tr '\n' ' ')
[ "$names" = "deb_done deb_tick " ] || fail "djp list names '$names', not 'deb_done deb_tick'"

out=$("$root/usr/bin/djp" trace -c "$work/marked 7" 'deb_*' 2>"$work/trace.err") ||
	fail "djp trace -c failed: $(tail -n 1 "$work/trace.err")"
got=$(echo "$out" | awk '{print $4, $5}' | tr '\n' ',')
want="deb_tick i=0,deb_tick i=1,deb_tick i=2,deb_tick i=3,deb_tick i=4,deb_tick i=5,deb_tick i=6,deb_done n=7,"
[ "$got" = "$want" ] || fail "djp trace -c printed '$got', not '$want'"

gcc -std=gnu11 -O2 -Wall -Werror $cflags -o "$work/linked" "$src/selftests/link/linked.c" $libs ||
	fail "cannot link linked.c with $libs"
lib=$(LD_LIBRARY_PATH="$root/usr/lib" "$work/linked") || fail "linked failed: $lib"
[ "$lib" = "$root/usr/lib/libdjprobe.so.0" ] || fail "linked loaded '$lib', not $root/usr/lib/libdjprobe.so.0"

rm -rf "$work"
echo "unpacked: ok"
