#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# install-full: the whole build installed into a DESTDIR, then used from there
# only, as a user would after `meson install`:
#   full.sh BUILD_ROOT
#  - no installed file names the build folder (ELF files without debug info);
#  - the loader lists the layer once (vulkaninfo --summary) and loads it;
#  - a small out-of-tree program builds with pkg-config (syncbridge,
#    syncbridge-egl) and runs;
#  - syncbridge-info doctor --json runs and prints one JSON document;
#  - the man pages render (man -l), where they were built;
#  - every syncbridge-info subcommand's --help exits 0 with help on stdout, and
#    a bad argument exits 2 with stdout empty; every installed program answers
#    --version.
set -uo pipefail
build=$1
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/common.sh"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/sb-install-full.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
dest=$tmp/dest
if ! meson install -C "$build" --no-rebuild --destdir "$dest" --quiet >"$tmp/install.log" 2>&1; then
	fail "meson install"; tail -20 "$tmp/install.log"; finish; exit
fi
pass "meson install --destdir"
# The prefix and libdir the build was configured with.
opt() { meson introspect --buildoptions "$build" |
	python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"]==sys.argv[1]))' "$1"; }
prefix=$(opt prefix) libdir=$(opt libdir) bindir=$(opt bindir) mandir=$(opt mandir)
case $libdir in /*) ;; *) libdir=$prefix/$libdir ;; esac
case $bindir in /*) ;; *) bindir=$prefix/$bindir ;; esac
case $mandir in /*) ;; *) mandir=$prefix/$mandir ;; esac
bin=$dest$bindir
named=$(files_naming "$dest" "$(cd "$build" && pwd)")
check "no installed file names the build folder${named:+ (found: $named)}" test -z "$named"

mapfile -t env_p < <(prefix_env "$dest" "$prefix" "$libdir")
run() { env "${env_p[@]}" PATH="$bin:/usr/bin:/bin" "$@"; }

# The layer, once.
if command -v vulkaninfo >/dev/null; then
	run SYNCBRIDGE_DEBUG=info vulkaninfo --summary >"$tmp/vi.out" 2>"$tmp/vi.err"
	n=$(grep -c VK_LAYER_SYNCBRIDGE_implicit_sync "$tmp/vi.out")
	check "vulkaninfo --summary lists the layer once (listed $n times)" test "$n" -eq 1
	check "the layer loads from the prefix (its log line)" grep -q "syncbridge: info: .*layer: " "$tmp/vi.err"
else
	fail "vulkaninfo (vulkan-tools) is installed"
fi

# An out-of-tree program through pkg-config.
cat >"$tmp/app.c" <<'C'
#include <stdio.h>
#include <syncbridge/syncbridge.h>
#include <syncbridge/egl.h>
int main(void)
{
	/* the bridge's switch: "0" must not mean "disabled" */
	printf("syncbridge %s, SYNCBRIDGE_DISABLE=%d\n", sb_library_get_version(),
	       sb_env_get_bool("SYNCBRIDGE_DISABLE", false));
	return SB_CHECK_VERSION(0, 1, 0) ? 0 : 1;
}
C
pc() { pc_dest "$dest" "$dest$libdir/pkgconfig:$(pkg-config --variable pc_path pkg-config)" "$@"; }
if cc -o "$tmp/app" "$tmp/app.c" $(pc --cflags --libs syncbridge syncbridge-egl) 2>"$tmp/cc.log"; then
	pass "an out-of-tree program builds with pkg-config syncbridge syncbridge-egl"
	out=$(run SYNCBRIDGE_DISABLE=0 "$tmp/app")
	check "it runs from the prefix ($out)" test "${out##*=}" = 0
else
	fail "an out-of-tree program builds with pkg-config"; cat "$tmp/cc.log"
fi

# syncbridge-info from the prefix.
info=$bin/syncbridge-info
if run "$info" doctor --json --timeout-ms 20000 >"$tmp/doctor.json" 2>"$tmp/doctor.err"; then
	check "syncbridge-info doctor --json prints one JSON document" \
		python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$tmp/doctor.json"
else
	fail "syncbridge-info doctor --json exits 0"; tail -5 "$tmp/doctor.err"
fi
# The commands as the overview lists them ("  NAME ARGS", two spaces in).
cmds=$(run "$info" help 2>/dev/null | awk '/^  [a-z][a-z-]*( |$)/ {print $1}')
check "syncbridge-info help lists its commands ($(echo $cmds))" test -n "$cmds"
for c in $cmds; do
	out=$(run "$info" "$c" --help 2>/dev/null); rc=$?
	check "syncbridge-info $c --help: exit 0, help on stdout (exit $rc)" test "$rc" -eq 0 -a -n "$out"
	out=$(run "$info" "$c" --no-such-option 2>/dev/null); rc=$?
	check "syncbridge-info $c --no-such-option: exit 2, stdout empty (exit $rc)" test "$rc" -eq 2 -a -z "$out"
done
for p in "$bin"/*; do
	out=$(run "$p" --version 2>/dev/null); rc=$?
	check "$(basename "$p") --version: exit 0 ($out)" test "$rc" -eq 0 -a -n "$out"
done

# Man pages, where this build made them.
pages=$(find "$dest$mandir" -type f 2>/dev/null)
if [ -n "$pages" ]; then
	for p in $pages; do
		check "man -l $(basename "$p") renders with a NAME section" \
			bash -c 'MANWIDTH=80 man -l "$1" 2>/dev/null | grep -q "^NAME"' _ "$p"
	done
elif grep -q "man_pages.*true\|'man pages': *true" "$build/meson-info/intro-buildoptions.json" 2>/dev/null; then
	fail "man pages were configured but none installed"
fi
finish
