#!/bin/sh
# The directory Kbuild builds a module folder in: symlinks, flat, to every
# file of the folder, and to each file shared with user space that the
# folder's Kbuild names as an object without having its source (kmod/Kbuild
# lists text_poke.o, whose source is arch/x86/text_poke.c).  Kbuild writes
# its objects next to the sources it is given, so they land here, under
# build/, and the worktree keeps sources only.  A Kbuild finds the project's
# root through the realpath of its own symlink.  Links to files that are
# gone are removed, so a rename does not leave a stale source behind.
# Usage: ktree.sh FOLDER DEST   (FOLDER relative to the project's root)
set -e
folder=$1
dest=$2
root=$(cd "$(dirname "$0")/../../.." && pwd)
[ -d "$root/$folder" ] || { echo "ktree.sh: no folder '$folder'" >&2; exit 1; }
[ -f "$root/$folder/Kbuild" ] || { echo "ktree.sh: $folder has no Kbuild" >&2; exit 1; }
mkdir -p "$dest"
find "$dest" -maxdepth 1 -type l ! -exec test -e {} \; -delete

for f in "$root/$folder"/*; do
	ln -sfn "$f" "$dest/$(basename "$f")"
done

# Objects in "NAME-y" and "obj-m" assignments, continuation lines joined.
objs=$(sed -e ':a' -e '/\\$/N; s/\\\n//; ta' "$root/$folder/Kbuild" |
	sed -n 's/^[A-Za-z0-9_-]*-[ym] *[:+]\{0,1\}= *//p' | tr ' \t' '\n\n' | sed -n 's/\.o$//p')
for o in $objs; do
	[ -e "$dest/$o.c" ] || [ -e "$dest/$o.S" ] && continue
	# A composite module's own name is not a source.
	grep -q "^$o-[ym] *[:+]\{0,1\}=" "$root/$folder/Kbuild" && continue
	src=$(cd "$root" && ls lib/"$o".c lib/"$o".S arch/x86/"$o".c arch/x86/"$o".S kernel/"$o".c 2>/dev/null | head -n 1)
	[ -n "$src" ] || { echo "ktree.sh: $folder/Kbuild names $o.o, but there is no $o.c or $o.S in $folder, lib, arch/x86 or kernel" >&2; exit 1; }
	ln -sfn "$root/$src" "$dest/$o.$(echo "$src" | sed 's/.*\.//')"
done
