#!/usr/bin/env bash
# Run a command (QEMU) from the venus root over this machine's own files.
#
#   venus-qemu.sh ROOT HOSTROOT COMMAND [ARGS...]
#
# ROOT is the Debian 13 root file system that scripts/setup.sh makes (QEMU 10 +
# virglrenderer 1.1 with venus; Debian 12's has no venus). COMMAND runs in a
# private mount namespace where ROOT's /usr is mounted over /usr and its
# ld.so.cache over /etc's, so QEMU, its modules, virgl_render_server, Mesa
# (lavapipe for venus, llvmpipe for the SDL-GL display) and every library come
# from Debian 13, while every other path (the kernel cache, the build tree, the
# results folder) is this machine's. This machine's root, as it was, is bound
# at HOSTROOT first: the guest's 9p root share points there, so the guest
# still sees the Debian 12 files the tests were built against.
#
# Why not chroot: the guest's 9p share, kernel, initrd, results folder and
# FIFOs would all need binding into the root one by one. Needs root (mount).
set -euo pipefail

[ $# -ge 3 ] || { echo "usage: $0 ROOT HOSTROOT COMMAND [ARGS...]" >&2; exit 2; }
root=$1 hostroot=$2
shift 2
[ -x "$root/usr/bin/qemu-system-x86_64" ] && [ -f "$root/etc/ld.so.cache" ] ||
	{ echo "venus-qemu.sh: $root is not a complete venus root; run scripts/setup.sh" >&2; exit 125; }
[ "$(id -u)" = 0 ] || { echo "venus-qemu.sh: needs root (a private mount namespace)" >&2; exit 125; }
mkdir -p "$hostroot"

# QEMU and its render server are the guest's GPU, not the program under
# test: the test's Vulkan selection (VK_ICD_FILENAMES pointing at the guest's
# venus driver, layers) would make the render server load that instead of the
# host's lavapipe, and venus would find no device (VK_ERROR_INITIALIZATION_FAILED
# in the guest). vm-run.sh has already written them into the guest's environment.
for v in $(compgen -e); do
	case $v in VK_*) unset "$v" ;; esac
done

# shellcheck disable=SC2016
exec unshare -m --propagation private bash -c '
	set -e
	root=$1 hostroot=$2
	shift 2
	mount --rbind / "$hostroot"
	mount --bind "$root/usr" /usr
	mount --bind "$root/etc/ld.so.cache" /etc/ld.so.cache
	exec "$@"
' venus-qemu "$root" "$hostroot" "$@"
