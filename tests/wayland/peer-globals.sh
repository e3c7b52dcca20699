# SPDX-License-Identifier: MIT
# Sourced by the scripts that run a compositor from the Debian 13 root
# (syncobj-peer.sh, proxy-wlroots.sh): its globals through the root's
# wayland-info, asked again until the ones the test needs are there.
#   peer_globals INFO SOCKET PID T0 BOUND_S IFACE...
#     Lists the globals of WAYLAND_DISPLAY=SOCKET into INFO until every
#     IFACE is among them, PID has gone, or BOUND_S seconds have passed
#     since T0 (date +%s) — a hang guard: under TCG a compositor's GL start
#     takes seconds, and KWin adds zwp_linux_dmabuf_v1 only once its OpenGL
#     backend is up, after its socket. Then prints the globals as comments.
#     Needs $intrixie (scripts/vm/in-trixie.sh).
peer_globals() {
	_info=$1 _sock=$2 _pid=$3 _t0=$4 _bound=$5
	shift 5
	_n=0
	while :; do
		_n=$((_n + 1))
		WAYLAND_DISPLAY=$_sock timeout 60 "$intrixie" /usr/bin/wayland-info >"$_info" 2>&1
		_rc=$?
		_all=1
		for _i in "$@"; do grep -q "'$_i'" "$_info" || _all=0; done
		[ $_all = 1 ] && break
		[ $(( $(date +%s) - _t0 )) -lt "$_bound" ] && kill -0 "$_pid" 2>/dev/null || break
		sleep 1
	done
	echo "# wayland-info: exit $_rc, try $_n, $(( $(date +%s) - _t0 )) s after start; globals:"
	grep -oE "interface: '[a-z_0-9]+',[[:space:]]+version:[[:space:]]+[0-9]+" "$_info" | sed "s/^/#   /"
}
