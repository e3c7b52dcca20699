# shellcheck shell=bash
# What both install tests share: checks on an installed tree (DESTDIR).

ok=0 bad=0
pass() { ok=$((ok + 1)); printf 'ok %d - %s\n' $((ok + bad)) "$*"; }
fail() { bad=$((bad + 1)); printf 'not ok %d - %s\n' $((ok + bad)) "$*"; }
check() { # check DESCRIPTION COMMAND...: pass when the command succeeds
	local what=$1
	shift
	if "$@"; then pass "$what"; else fail "$what"; fi
}
finish() {
	printf '%d passed, %d failed\n' "$ok" "$bad"
	[ "$bad" -eq 0 ]
}

# ELF objects and ar archives of them (static libraries).
is_object() {
	local magic
	magic=$(head -c 7 "$1" | od -An -c | tr -d ' ')
	case $magic in 177ELF* | '!<arch>') return 0 ;; *) return 1 ;; esac
}

# files_naming DIR NEEDLE: every installed file that contains NEEDLE, with ELF
# files read without their debug sections (DW_AT_comp_dir names the build
# folder in any -g build: that is where a debugger finds the sources, and
# stripping or -ffile-prefix-map is the packager's choice). What remains is
# what the program can see at run time: strings, manifests, .pc files.
files_naming() {
	local dir=$1 needle=$2 f tmpf
	tmpf=$(mktemp)
	while IFS= read -r -d '' f; do
		if is_object "$f"; then
			objcopy --strip-debug "$f" "$tmpf" 2>/dev/null || cp "$f" "$tmpf"
			grep -qaF -- "$needle" "$tmpf" && echo "${f#"$dir"}"
		elif grep -qaF -- "$needle" "$f"; then
			echo "${f#"$dir"}"
		fi
	done < <(find "$dir" -type f -print0)
	rm -f "$tmpf"
}

# The loader's view of an installed prefix and nothing else: its data dir first
# (implicit manifests: Debian 12's loader reads only XDG_DATA_DIRS), the
# system's after it for the drivers; its libdir for the layer's bare name.
# Printed as arguments of env(1); the explicit-layer variables are unset, not
# emptied (an empty VK_LAYER_PATH would hide every explicit manifest).
prefix_env() { # prefix_env DESTDIR PREFIX LIBDIR
	printf '%s\n' -u VK_LAYER_PATH -u VK_ADD_LAYER_PATH -u VK_INSTANCE_LAYERS \
		-u VK_LOADER_LAYERS_ENABLE -u VK_LOADER_LAYERS_DISABLE \
		"XDG_DATA_DIRS=$1$2/share:/usr/share" "XDG_CONFIG_DIRS=/nonexistent" \
		"LD_LIBRARY_PATH=$1$3" "HOME=$1/home" "MESA_SHADER_CACHE_DISABLE=true"
}
# pkg-config on a DESTDIR: the sysroot prefixes every path, and paths under
# /usr are kept (they are the DESTDIR's, not the system's).
pc_dest() { # pc_dest DESTDIR PCDIRS ARGS...
	local d=$1 dirs=$2
	shift 2
	PKG_CONFIG_SYSROOT_DIR=$d PKG_CONFIG_LIBDIR=$dirs PKG_CONFIG_ALLOW_SYSTEM_CFLAGS=1 \
		PKG_CONFIG_ALLOW_SYSTEM_LIBS=1 pkg-config "$@"
}
