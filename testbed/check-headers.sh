#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every public header compiles on its own (it includes what it uses), twice
# in a row (include guard), pedantically, as C11 and as C++11:
#   C:   -std=c11   -pedantic -Werror -Wall -Wextra
#   C++: -std=c++11 -pedantic -Werror -Wall -Wextra
# and, in C++, every SB_EXPORT function of the headers links against the
# shared library with C linkage (extern "C"), i.e. the names are not mangled.
# Used for every library's headers (core, EGL bridge, Wayland helpers).
#
#   check-headers.sh INCLUDE_DIR LIBRARY.so HEADER...
# Environment: CC, CXX (commands, may contain arguments such as "ccache gcc";
# CXX empty or unset: C++ is skipped with a note). Clang and clang++ are
# tried too when they are installed, since users build with them.
set -uo pipefail

if [ $# -lt 3 ]; then
	echo "usage: $0 INCLUDE_DIR LIBRARY.so HEADER..." >&2
	exit 2
fi
incdir=$1 lib=$2
shift 2
# The generated headers (syncbridge/version.h) are in the build tree.
build_inc=${CHECK_HEADERS_BUILD_INCLUDE:+-I$CHECK_HEADERS_BUILD_INCLUDE}

cc=${CC:-cc}
cxx=${CXX:-}
cflags=(-std=c11 -pedantic -Werror -Wall -Wextra)
cxxflags=(-std=c++11 -pedantic -Werror -Wall -Wextra)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail=0 n=0

# compile LANG COMPILER-CMD HEADER-NAME
compile() {
	local lang=$1 comp=$2 name=$3 ext flags src
	if [ "$lang" = c ]; then ext=c flags=("${cflags[@]}"); else ext=cc flags=("${cxxflags[@]}"); fi
	src=$tmp/tu.$ext
	printf '#include <%s>\n#include <%s>\n' "$name" "$name" >"$src"
	n=$((n + 1))
	# shellcheck disable=SC2086 # $comp may be "ccache gcc"
	if out=$($comp "${flags[@]}" -I"$incdir" $build_inc -fsyntax-only "$src" 2>&1); then
		echo "ok $n - $name alone as ${lang^^} ($comp ${flags[*]})"
	else
		echo "not ok $n - $name alone as ${lang^^} ($comp ${flags[*]}):"
		echo "$out" | sed 's/^/#   /'
		fail=1
	fi
}

# cxx_link COMPILER-CMD: call every SB_EXPORT function's address from C++ and link.
cxx_link() {
	local comp=$1 fnames
	fnames=$(for h in "${headers[@]}"; do grep -h 'SB_EXPORT' "$h"; done | grep -v '#' |
		grep -oE '\bsb_[A-Za-z0-9_]+[[:space:]]*\(' | tr -d '( \t' | sort -u)
	{
		for name in "${names[@]}"; do echo "#include <$name>"; done
		echo '#include <cstdio>'
		echo 'typedef void (*fn)();'
		echo 'int main() {'
		echo '  fn all[] = {'
		for f in $fnames; do echo "    reinterpret_cast<fn>(&$f),"; done
		echo '  };'
		echo '  std::printf("%u functions\n", unsigned(sizeof(all) / sizeof(all[0])));'
		echo '  return 0;'
		echo '}'
	} >"$tmp/link.cc"
	n=$((n + 1))
	# shellcheck disable=SC2086
	# Without -pedantic -Werror: this checks linkage; the pedantic checks are above.
	if out=$($comp -std=c++11 -I"$incdir" $build_inc "$tmp/link.cc" -o "$tmp/link" "$lib" 2>&1) &&
		out=$(LD_LIBRARY_PATH=$(dirname "$lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$tmp/link" 2>&1); then
		echo "ok $n - C++ program links every public function with C linkage and runs ($out)"
	else
		echo "not ok $n - C++ program using every public function ($comp):"
		echo "$out" | sed 's/^/#   /'
		echo "#   (undefined references to sb_* with argument types mean a missing extern \"C\")"
		fail=1
	fi
}

headers=("$@")
names=()
for h in "${headers[@]}"; do
	[ -r "$h" ] || { echo "Bail out! cannot read $h"; exit 1; }
	names+=("syncbridge/$(basename "$h")")
done

ccs=("$cc")
cxxs=()
[ -n "$cxx" ] && cxxs+=("$cxx")
if command -v clang >/dev/null && [[ "$cc" != *clang* ]]; then ccs+=(clang); fi
if command -v clang++ >/dev/null && [[ "$cxx" != *clang++* ]]; then cxxs+=(clang++); fi

for comp in "${ccs[@]}"; do
	for name in "${names[@]}"; do compile c "$comp" "$name"; done
done
if [ ${#cxxs[@]} -eq 0 ]; then
	echo "# no C++ compiler found: C++ checks skipped"
fi
for comp in "${cxxs[@]}"; do
	for name in "${names[@]}"; do compile cxx "$comp" "$name"; done
done
[ ${#cxxs[@]} -gt 0 ] && cxx_link "${cxxs[0]}"

if [ $fail -ne 0 ]; then
	echo "FAIL: a public header does not compile standalone / pedantically"
	exit 1
fi
echo "PASS: $n checks"
