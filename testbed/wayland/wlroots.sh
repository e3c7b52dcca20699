# SPDX-License-Identifier: MIT
# Sourced by what runs a wlroots compositor from the Debian 13 root in the
# GPU guest (tests/wayland/proxy-wlroots.sh, bench/wl_proxy_frames.sh).
#   wlroots_start sway|labwc|wayfire LOG
#     Starts it headless (scripts/vm/in-trixie.sh, shown only virtio_gpu's
#     nodes) in a session of its own (setsid: the whole tree, unshare, chroot
#     and the compositor, ends with one stop_group of wlr_pid), its output
#     in LOG. Sets wlr_pid and wlr_sock, the socket's name in
#     $XDG_RUNTIME_DIR, which must be under /run/user/0 (the only run folder
#     the root shares). Returns 1 when no socket came in 60 s. Needs
#     $intrixie.
# The headless setup as measured in the GPU guest (facts.md): no input
# devices, the GLES2 renderer (virgl; pixman would give no dma-buf import and
# so no linux-dmabuf for the clients' buffers).
#
# wayfire 0.9.0 will not run as root: it drops root and refuses to start
# when it could take it back ("Unable to drop root", its setuid(0) check).
# It runs as nobody, which changes the guest's own state (nothing of the
# host's): /run/user/0 passable (711), the runtime folder nobody's (root's
# programs still reach it), virtio_gpu's /dev/dri nodes open to all. Its
# wlroots 0.17 headless backend opens no render node of its own:
# WLR_RENDER_DRM_DEVICE names virtio_gpu's. No plugins, no Xwayland.
wayfire_as_nobody() {
	# virtio_gpu's nodes, as the guest names them ("renderD129=virtio_gpu"):
	# each opened to all, the render node named for wlroots.
	_nodes=$(/run/sb-vm/busybox sh /run/sb-vm/guest-info.sh | sed -n 's/=virtio_gpu$//p')
	_node=
	for _n in $_nodes; do
		case $_n in card[0-9]* | renderD[0-9]*) chmod 666 "/dev/dri/$_n" ;; *) continue ;; esac
		case $_n in renderD*) [ -n "$_node" ] || _node=$_n ;; esac
	done
	[ -n "$_node" ] || return 1
	chmod 711 /run/user/0
	printf '%s\n' '[core]' 'plugins =' 'xwayland = false' >"$XDG_RUNTIME_DIR/wayfire.ini"
	chown -R 65534:65534 "$XDG_RUNTIME_DIR"
	export WLR_RENDER_DRM_DEVICE=/dev/dri/$_node
}
wlroots_start() {
	case $1 in
	sway)
		# A config of our own (the root's default starts swaybar and binds
		# keys): no Xwayland, no bar. sway reads it inside the root.
		printf '%s\n' 'xwayland disable' 'default_border none' >"$XDG_RUNTIME_DIR/sway.conf"
		set -- "$2" /usr/bin/sway -c "$XDG_RUNTIME_DIR/sway.conf"
		;;
	labwc)
		# An empty config folder: labwc's built-in defaults, no autostart,
		# no menu programs of the root's user.
		mkdir -p "$XDG_RUNTIME_DIR/labwc"
		set -- "$2" /usr/bin/labwc -C "$XDG_RUNTIME_DIR/labwc"
		;;
	wayfire)
		wayfire_as_nobody || return 1
		set -- "$2" /usr/bin/env HOME="$XDG_RUNTIME_DIR" /usr/bin/setpriv --reuid=65534 \
			--regid=65534 --clear-groups /usr/bin/wayfire -c "$XDG_RUNTIME_DIR/wayfire.ini"
		;;
	*) return 2 ;;
	esac
	_log=$1
	shift
	WLR_BACKENDS=headless WLR_LIBINPUT_NO_DEVICES=1 WLR_RENDERER=gles2 \
		SYNCBRIDGE_TRIXIE_DRI=virtio_gpu setsid "$intrixie" "$@" >"$_log" 2>&1 &
	wlr_pid=$!
	# Neither has a socket option: libwayland's first free wayland-N.
	wlr_sock=
	for _ in $(seq 1 600); do
		for _s in "$XDG_RUNTIME_DIR"/wayland-[0-9] "$XDG_RUNTIME_DIR"/wayland-[0-9][0-9]; do
			[ -S "$_s" ] && { wlr_sock=$(basename "$_s"); return 0; }
		done
		kill -0 "$wlr_pid" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}
