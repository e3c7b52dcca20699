#!/bin/sh
# SPDX-License-Identifier: MIT
# Load the vivid virtual camera (and the modules it needs, dependencies
# first) if no vivid device is there yet, then run the command.
#
#   with-vivid.sh CMD [ARGS...]
#
# The modules come from the kernel package scripts/setup.sh unpacked for the
# test guest (the guest runs that kernel and sees the host's files):
# ${SYNCBRIDGE_KERNEL_DIR:-$SYNCBRIDGE_CACHE/kernel}/lib/modules/$(uname -r),
# else /lib/modules/$(uname -r). Needs root. Exits 77 (skip) when vivid can
# be neither found nor loaded.
set -eu

have_vivid() {
	for d in /sys/class/video4linux/video*; do
		[ -e "$d/name" ] || continue
		case $(cat "$d/name") in vivid*) return 0 ;; esac
	done
	return 1
}

load() {
	kver=$(uname -r)
	cache=${SYNCBRIDGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/syncbridge}
	for dir in "${SYNCBRIDGE_KERNEL_DIR:-$cache/kernel}/lib/modules/$kver" "/lib/modules/$kver"; do
		[ -d "$dir" ] && break
	done
	[ -d "$dir" ] || { echo "with-vivid.sh: no modules for kernel $kver" >&2; return 1; }
	tmp=$(mktemp -d)
	# vivid and everything it needs live under drivers/media; walk the whole
	# tree (slow on the guest's 9p root) only if something is not there.
	find "$dir/kernel/drivers/media" -name '*.ko*' >"$tmp/index" 2>/dev/null || true
	full=0
	loaded=" "
	# Depth first: every module after the ones it depends on.
	add() {
		local f dep # dash and busybox sh have local; recursion needs it
		case $loaded in *" $1 "*) return 0 ;; esac
		f=$(grep -E "/($1|$(echo "$1" | tr _ -)|$(echo "$1" | tr - _))\.ko" "$tmp/index" | head -n1)
		if [ -z "$f" ] && [ $full = 0 ]; then
			find "$dir" -name '*.ko*' >"$tmp/index"
			full=1
			f=$(grep -E "/($1|$(echo "$1" | tr _ -)|$(echo "$1" | tr - _))\.ko" "$tmp/index" | head -n1)
		fi
		if [ -z "$f" ]; then
			# Built into the kernel, or already loaded: nothing to do.
			grep -qE "/$1\.ko" "$dir/modules.builtin" 2>/dev/null && return 0
			[ -d "/sys/module/$(echo "$1" | tr - _)" ] && return 0
			echo "with-vivid.sh: module $1 not found under $dir" >&2
			return 1
		fi
		for dep in $(modinfo -F depends "$f" | tr ',' ' '); do add "$dep" || return 1; done
		loaded="$loaded$1 "
		[ -d "/sys/module/$(echo "$1" | tr - _)" ] && return 0
		case $f in
		*.xz) xz -dc "$f" >"$tmp/$1.ko" ;;
		*.zst) zstd -qdc "$f" >"$tmp/$1.ko" ;;
		*.gz) gzip -dc "$f" >"$tmp/$1.ko" ;;
		*) cp "$f" "$tmp/$1.ko" ;;
		esac
		insmod "$tmp/$1.ko" 2>"$tmp/err" || grep -q 'File exists' "$tmp/err" || {
			echo "with-vivid.sh: insmod $1: $(cat "$tmp/err")" >&2
			return 1
		}
	}
	rc=0
	add vivid || rc=1
	rm -rf "$tmp"
	return $rc
}

if ! have_vivid; then
	if ! load || ! have_vivid; then
		echo "SKIP: the vivid virtual camera is not available (run in the test guest, as root)"
		exit 77
	fi
	# udev is not running in the guest: give the nodes a moment to appear.
	i=0
	while [ $i -lt 20 ] && ! ls /dev/video* >/dev/null 2>&1; do sleep 0.1; i=$((i + 1)); done
fi
exec "$@"
