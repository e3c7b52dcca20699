#!/bin/sh
# SPDX-License-Identifier: MIT
# vkcube (Debian's vulkan-tools) under VK_LAYER_SYNCBRIDGE_implicit_sync, on a
# private Xvfb server:
#
#   vkcube.sh LAYER_XDG_DIR FRAMES active|passthrough|any
#
# LAYER_XDG_DIR: an XDG data dir with the build tree's implicit manifest. The
# test passes when vkcube exits 0 after FRAMES frames (`vkcube --c FRAMES`),
# the loader's debug output (VK_LOADER_DEBUG=layer) shows the layer inserted
# into the instance and device chains, the layer says it is `active` on the
# device (the test guest: lavapipe with SYNC_FD semaphores) or `pass-through`
# (this project's host: no SYNC_FD; `any` accepts either, for hosts with a
# GPU), and nobody logged an error or a syncbridge warning.
# Exit 77 when vkcube or Xvfb is missing.
set -u

dir=$1 frames=$2 expect=$3
command -v vkcube >/dev/null || { echo "SKIP: vkcube (vulkan-tools) is not installed"; exit 77; }
command -v Xvfb >/dev/null || { echo "SKIP: Xvfb (xvfb) is not installed"; exit 77; }
[ -d "$dir/vulkan/implicit_layer.d" ] || { echo "Bail out! no manifest in $dir"; exit 1; }

tmp=$(mktemp -d)
xpid=
cleanup() {
	[ -n "$xpid" ] && kill "$xpid" 2>/dev/null && wait "$xpid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

# A display number nobody uses: Xvfb picks one and writes it to fd 3.
Xvfb -displayfd 3 -screen 0 640x480x24 -nolisten tcp 3>"$tmp/display" >"$tmp/xvfb.log" 2>&1 &
xpid=$!
i=0
while [ ! -s "$tmp/display" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
[ -s "$tmp/display" ] || { echo "Bail out! Xvfb did not start"; cat "$tmp/xvfb.log"; exit 1; }
export DISPLAY=":$(cat "$tmp/display")"

export XDG_DATA_DIRS="$dir:${XDG_DATA_DIRS:-/usr/local/share:/usr/share}"
export VK_LOADER_DEBUG=layer
export SYNCBRIDGE_DEBUG=debug
unset SYNCBRIDGE_DISABLE VK_INSTANCE_LAYERS

start=$(date +%s)
vkcube --c "$frames" >"$tmp/log" 2>&1
rc=$?
secs=$(($(date +%s) - start))

fail=0
check() { # DESCRIPTION COMMAND...
	d=$1
	shift
	if "$@"; then echo "ok - $d"; else echo "not ok - $d"; fail=1; fi
}
has() { grep -q "$1" "$tmp/log"; }
check "vkcube --c $frames exits 0 (${secs} s)" [ "$rc" = 0 ]
check "the loader inserted the layer into the instance chain" has 'Insert instance layer "VK_LAYER_SYNCBRIDGE_implicit_sync"'
check "the loader inserted the layer into the device chain" has 'Inserted device layer "VK_LAYER_SYNCBRIDGE_implicit_sync"'
check "the layer's instance is loaded" has 'VK_LAYER_SYNCBRIDGE_implicit_sync loaded'
case $expect in
active) check "the layer is active on the device" has 'layer: device ".*": active, mode ' ;;
passthrough) check "the layer passes the device through" has 'layer: device .*: pass-through' ;;
any) check "the layer is on the device, active or pass-through" \
	sh -c "grep -qE 'layer: device \".*\": (active, mode |pass-through)' '$tmp/log'" ;;
*) echo "Bail out! expect active, passthrough or any"; exit 1 ;;
esac
check "no syncbridge error or warning" sh -c "! grep -E 'syncbridge: (error|warn)' '$tmp/log'"
check "no ERROR from the loader or vkcube" sh -c "! grep -E '^ERROR|ERROR \\|' '$tmp/log'"
grep -E 'layer: device .*: (active, mode|pass-through)' "$tmp/log" | sed 's/^/# /'
if [ $fail != 0 ]; then
	echo "# vkcube's output:"
	sed 's/^/# /' "$tmp/log" | tail -n 60
fi
exit $fail
