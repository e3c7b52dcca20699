# Sourced by the scripts that install packages: scripts/setup.sh (apt-get and
# the guest-kernel download need root) and the ones that run it
# (run-demo.sh, run-tests.sh, run-bench.sh, .ci/run).
#
# sb_setup SCRIPT [ARGS...]
#   unless SYNCBRIDGE_SETUP=0: sb_as_root SCRIPT ARGS..., then scripts/setup.sh.
# sb_build BUILD [MESON SETUP OPTIONS...]
#   configure BUILD once (quietly), then build it.
#
# sb_as_root SCRIPT [ARGS...]
#   as root: returns, nothing changes;
#   as another user, with sudo installed: runs `bash SCRIPT ARGS...` again
#     under sudo (exec), keeping the SYNCBRIDGE_*, SB_* and *SAN_OPTIONS
#     variables, which sudo's env_reset would drop;
#   as another user without sudo: returns, and the script goes on as that user
#     (scripts/setup.sh then stops with "run as root" where it needs root).
# So the same command works as root on a machine without sudo and as a normal
# user with sudo.
sb_as_root() {
	local script=$1 v keep=()
	shift
	[ "$(id -u)" = 0 ] && return 0
	command -v sudo >/dev/null 2>&1 || return 0
	# Already re-run and still not root (sudo -u, a wrapper): do not loop.
	[ -z "${SYNCBRIDGE_AS_ROOT:-}" ] || return 0
	for v in $(compgen -e); do
		case $v in
		SYNCBRIDGE_* | SB_* | *SAN_OPTIONS) keep+=("$v=${!v}") ;;
		esac
	done
	printf '%s: not root: running it again with sudo\n' "${script##*/}" >&2
	exec sudo env SYNCBRIDGE_AS_ROOT=1 "${keep[@]}" bash "$script" "$@"
}

sb_setup() {
	[ "${SYNCBRIDGE_SETUP:-1}" != 0 ] || return 0
	sb_as_root "$@"
	bash "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
}

sb_build() {
	local build=$1
	shift
	[ -f "$build/build.ninja" ] || meson setup "$build" "$@" >/dev/null
	ninja -C "$build" >/dev/null
}
