#!/bin/sh
# Check that the Debian packages named on the command line are installed.
# As root, install the missing ones with apt-get; otherwise print the exact
# command to run and fail.  Used by the Makefile before the first build.
missing=""
for pkg in "$@"; do
	status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null)
	case "$status" in
	*"install ok installed"*) ;;
	*) missing="$missing $pkg" ;;
	esac
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ]; then
	echo "djprobe: installing missing packages:$missing" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >/dev/null && apt-get install -y -qq$missing >/dev/null && exit 0
	echo "djprobe: apt-get install failed for:$missing" >&2
	exit 1
fi
echo "djprobe: missing packages:$missing" >&2
echo "djprobe: run: sudo apt-get install -y$missing" >&2
exit 1
