#!/bin/sh
# SPDX-License-Identifier: MIT
# Run a test program inside the Debian 13 root (the venus root that
# scripts/setup.sh makes), in the test guest: its Vulkan loader, Mesa 25.0.7
# lavapipe and validation layers 1.4.309 — recent enough to check the
# layer's SYNC_FD exports against VUID-VkSemaphoreGetFdInfoKHR-handleType-03254
# (Debian 12's 1.3.240 does not). The program, built against Debian 12, runs
# there as it is (Debian 13's libraries are newer); its compiled-in build
# paths resolve because the project folder (and the build folder, if it is
# elsewhere) are bound at the same paths inside the root.
#
#   scripts/vm/in-trixie.sh PROGRAM [ARGS...]      (as root, in the test guest)
#
# SYNCBRIDGE_TRIXIE_ROOT names another Debian 13 root (default: the venus
# root). SYNCBRIDGE_TRIXIE_DRI=DRIVER shows the program only that driver's
# /dev/dri nodes (a tmpfs /dev/dri in the root with copies of them), so that
# which device a program picks does not depend on the listing order (KWin's
# virtual backend takes the first device libdrm lists; mutter adds every
# render node and picks a primary one). In the GPU guest (card0/renderD128
# vgem, card1/renderD129 virtio_gpu) both took virtio_gpu without it too.
#
# XDG_RUNTIME_DIR, when it is a folder, is bound at the same path (the
# caller's Wayland socket); /run/user/0 always is.
#
# Exits 77 (skip) outside a guest or without the root; otherwise PROGRAM's
# status.
set -eu
[ "${SYNCBRIDGE_VM_GUEST:-}" = 1 ] || { echo "SKIP: in-trixie.sh runs in the test guest"; exit 77; }
prog=${1:?usage: in-trixie.sh PROGRAM [ARGS...]}
cache=${SYNCBRIDGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/syncbridge}
root=${SYNCBRIDGE_TRIXIE_ROOT:-$cache/venus-root}
[ -x "$root/usr/bin/qemu-system-x86_64" ] || { echo "SKIP: no Debian 13 root at $root (scripts/setup.sh makes it)"; exit 77; }
[ -f "$root/usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json" ] ||
	{ echo "in-trixie.sh: $root has no vulkan-validationlayers (rerun scripts/setup.sh)"; exit 1; }
[ -x "$root$prog" ] || [ -x "$prog" ] || { echo "SKIP: $prog is not in $root (scripts/setup.sh installs it)"; exit 77; }

# The binds go in a mount namespace of this run's own (tests side by side).
if [ -z "${SB_IN_TRIXIE_NS:-}" ]; then
	SB_IN_TRIXIE_NS=1 exec unshare -m --propagation private "$0" "$@"
fi
unset SB_IN_TRIXIE_NS

here=$(cd "$(dirname "$0")/../.." && pwd)
prog=$(cd "$(dirname "$prog")" && pwd)/$(basename "$prog")
# The build folder: the nearest folder above the program with build.ninja.
build=$(dirname "$prog")
while [ "$build" != / ] && [ ! -f "$build/build.ninja" ]; do build=$(dirname "$build"); done

bind() { mkdir -p "$root$1" && mount --bind "$1" "$root$1"; }
mount -t proc proc "$root/proc"
mount --rbind /sys "$root/sys"
mount --rbind /dev "$root/dev"
if [ -n "${SYNCBRIDGE_TRIXIE_DRI:-}" ]; then
	mount -t tmpfs -o mode=755 tmpfs "$root/dev/dri"
	# Each node's driver as the guest names it (scripts/vm/guest/guest-info.sh,
	# which the guest's init copies to /run/sb-vm: "card1=virtio_gpu" lines).
	/run/sb-vm/busybox sh /run/sb-vm/guest-info.sh |
		while IFS='=' read -r n d; do
			case $n in card[0-9]* | renderD[0-9]*) ;; *) continue ;; esac
			if [ "$d" = "$SYNCBRIDGE_TRIXIE_DRI" ]; then cp -a "/dev/dri/$n" "$root/dev/dri/"; fi
		done
	[ -n "$(ls "$root/dev/dri")" ] || { echo "SKIP: no $SYNCBRIDGE_TRIXIE_DRI node in /dev/dri"; exit 77; }
fi
mount -t tmpfs tmpfs "$root/tmp"
bind "$here"
# A program outside any build tree (a Debian 13 one) walks up to "/": nothing
# to bind (binding "/" would hide the root).
case $build/ in "$here"/*) ;; //) ;; *) bind "$build" ;; esac
[ -d /run/user/0 ] && bind /run/user/0
# The caller's runtime folder (its Wayland socket), e.g. stock_client.py's
# under the guest's /tmp, which the root's own /tmp would hide.
case ${XDG_RUNTIME_DIR:-} in
'' | /run/user/0 | /run/user/0/*) ;;
*) [ -d "$XDG_RUNTIME_DIR" ] && bind "$XDG_RUNTIME_DIR" ;;
esac
shift
rc=0
chroot "$root" /usr/bin/env -u LD_LIBRARY_PATH "$prog" "$@" || rc=$?
exit $rc
