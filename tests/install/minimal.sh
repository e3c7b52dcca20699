#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# install-minimal: what a packager of the libraries and the layer gets.
#   minimal.sh SOURCE_ROOT BUILD_ROOT
# Configures a second build of SOURCE_ROOT with every program and the tests
# off (-Dtools/examples/compositor=disabled -Dtests=false) and both library
# kinds, then checks:
#  - neither json-c nor libpng is a dependency of that build;
#  - `meson install` into a DESTDIR: shared and static libraries, headers with
#    the generated version.h, .pc files, the layer and its manifest; no
#    installed file names the build folder (ELF files without debug info);
#  - an out-of-tree program builds against it with pkg-config --static;
#  - `meson install --tags runtime`: the libraries, the layer and its manifest,
#    no headers; the loader finds that layer from the prefix alone and loads
#    it (the layer's own log line), and without the prefix it does not (the
#    control of that check).
set -uo pipefail
src=$1 main_build=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/common.sh"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/sb-install-min.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
build=$tmp/build prefix=/usr libdir=lib/x86_64-linux-gnu
opts=(-Dtests=false -Dtools=disabled -Dexamples=disabled -Dcompositor=disabled
	-Ddefault_library=both --prefix="$prefix" --libdir="$libdir" --buildtype=debugoptimized)
# -Dman_pages exists once the man pages are built (tools/ and docs/man).
if grep -q "'man_pages'" "$src/meson_options.txt"; then opts+=(-Dman_pages=disabled); fi

if ! meson setup "$build" "$src" "${opts[@]}" >"$tmp/setup.log" 2>&1; then
	fail "meson setup ${opts[*]}"; tail -30 "$tmp/setup.log"; finish; exit
fi
pass "meson setup ${opts[*]}"
deps=$(meson introspect --dependencies "$build" 2>/dev/null)
check "json-c is not a dependency" bash -c '! grep -q "\"name\": \"json-c\"" <<<"$1"' _ "$deps"
check "libpng is not a dependency" bash -c '! grep -q "\"name\": \"libpng\"" <<<"$1"' _ "$deps"
if ! ninja -C "$build" >"$tmp/build.log" 2>&1; then
	fail "ninja"; tail -30 "$tmp/build.log"; finish; exit
fi
pass "the libraries and the layer build"

dest=$tmp/dest
check "meson install" meson install -C "$build" --no-rebuild --destdir "$dest" --quiet
for f in "$libdir/libsyncbridge.so.0" "$libdir/libsyncbridge.a" "$libdir/libsyncbridge-egl.a" \
	"$libdir/libVkLayer_SYNCBRIDGE_implicit_sync.so" "include/syncbridge/version.h" \
	"$libdir/pkgconfig/syncbridge.pc" "share/vulkan/implicit_layer.d/VkLayer_SYNCBRIDGE_implicit_sync.json"; do
	check "installed: $prefix/$f" test -e "$dest$prefix/$f"
done
check "no program installed" bash -c '[ ! -d "$1" ] || [ -z "$(ls -A "$1")" ]' _ "$dest$prefix/bin"
named=$(files_naming "$dest" "$build")
check "no installed file names the build folder${named:+ (found: $named)}" test -z "$named"
named=$(files_naming "$dest" "$main_build")
check "no installed file names the source tree's build folder${named:+ (found: $named)}" test -z "$named"

# An out-of-tree program, statically linked, from the DESTDIR's .pc files.
cat >"$tmp/app.c" <<'C'
#include <stdio.h>
#include <string.h>
#include <syncbridge/syncbridge.h>
#if !SB_CHECK_VERSION(0, 1, 0) || SB_CHECK_VERSION(999, 0, 0)
#error "SB_CHECK_VERSION is wrong"
#endif
int main(void)
{
	printf("%s %s\n", sb_library_get_version(), SB_VERSION_STRING);
	return strcmp(sb_library_get_version(), SB_VERSION_STRING) != 0;
}
C
pc() { pc_dest "$dest" "$dest$prefix/$libdir/pkgconfig:$(pkg-config --variable pc_path pkg-config)" "$@"; }
if cc -o "$tmp/app" "$tmp/app.c" $(pc --cflags syncbridge) -static-libgcc \
	$(pc --libs --static syncbridge | sed 's/-lsyncbridge/-l:libsyncbridge.a/') 2>"$tmp/cc.log"; then
	pass "an out-of-tree program links libsyncbridge.a through pkg-config --static"
	check "it runs, and the library's version is the headers'" "$tmp/app"
	check "it does not need libsyncbridge.so" bash -c '! ldd "$1" | grep -q libsyncbridge' _ "$tmp/app"
else
	fail "an out-of-tree program links libsyncbridge.a"; cat "$tmp/cc.log"
fi

rt=$tmp/runtime
check "meson install --tags runtime" \
	meson install -C "$build" --no-rebuild --tags runtime --destdir "$rt" --quiet
check "runtime: the layer" test -e "$rt$prefix/$libdir/libVkLayer_SYNCBRIDGE_implicit_sync.so"
check "runtime: its implicit manifest" \
	test -e "$rt$prefix/share/vulkan/implicit_layer.d/VkLayer_SYNCBRIDGE_implicit_sync.json"
check "runtime: libsyncbridge.so.0" test -e "$rt$prefix/$libdir/libsyncbridge.so.0"
check "runtime: no headers" test ! -e "$rt$prefix/include"
check "runtime: no static library" test ! -e "$rt$prefix/$libdir/libsyncbridge.a"

if ! command -v vulkaninfo >/dev/null; then
	fail "vulkaninfo (vulkan-tools) is installed"; finish; exit
fi
mapfile -t env_rt < <(prefix_env "$rt" "$prefix" "$prefix/$libdir")
env "${env_rt[@]}" SYNCBRIDGE_DEBUG=info vulkaninfo --summary >"$tmp/vi.out" 2>"$tmp/vi.err"
check "the loader lists the runtime-installed layer" grep -q VK_LAYER_SYNCBRIDGE_implicit_sync "$tmp/vi.out"
check "and loads it (its own log line at SYNCBRIDGE_DEBUG=info)" grep -q "syncbridge: info: .*layer: " "$tmp/vi.err"
# Control: the same command without the prefix must not see the layer, or the
# two checks above prove nothing (an installed copy elsewhere would pass them).
env "${env_rt[@]}" XDG_DATA_DIRS=/usr/share LD_LIBRARY_PATH= SYNCBRIDGE_DEBUG=info \
	vulkaninfo --summary >"$tmp/vi0.out" 2>"$tmp/vi0.err"
check "control: without the prefix the loader has no such layer" \
	bash -c '! grep -q VK_LAYER_SYNCBRIDGE "$1" && ! grep -q "syncbridge: info" "$2"' _ "$tmp/vi0.out" "$tmp/vi0.err"
finish
