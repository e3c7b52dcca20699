#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# <syncbridge/egl.h> compiles on its own (with only the EGL headers besides
# ours), twice in a row, pedantically as C11 and C++11, and a C++ program
# taking the address of every SB_EXPORT function in it links against
# libsyncbridge-egl with C linkage. (tests/core/check-headers.sh does the same
# for the core headers; egl.h is not in the umbrella header it includes.)
#
#   check-egl-header.sh INCLUDE_DIR LIBRARY.so HEADER
# Environment: CC, CXX (CXX empty: the C++ checks are skipped with a note).
set -uo pipefail

[ $# -eq 3 ] || { echo "usage: $0 INCLUDE_DIR LIBRARY.so HEADER" >&2; exit 2; }
incdir=$1 lib=$2 header=$3
cc=${CC:-cc} cxx=${CXX:-}
name=syncbridge/$(basename "$header")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0 n=0

printf '#include <%s>\n#include <%s>\n' "$name" "$name" >"$tmp/tu.c"
cp "$tmp/tu.c" "$tmp/tu.cc"
n=$((n + 1))
# shellcheck disable=SC2086 # $cc may be "ccache gcc"
if out=$($cc -std=c11 -pedantic -Werror -Wall -Wextra -I"$incdir" -fsyntax-only "$tmp/tu.c" 2>&1); then
	echo "ok $n - $name alone as C11"
else
	echo "not ok $n - $name alone as C11:"; echo "$out" | sed 's/^/#   /'; fail=1
fi

if [ -z "$cxx" ]; then
	echo "# no C++ compiler: C++ checks skipped"
else
	n=$((n + 1))
	# shellcheck disable=SC2086
	if out=$($cxx -std=c++11 -pedantic -Werror -Wall -Wextra -I"$incdir" -fsyntax-only "$tmp/tu.cc" 2>&1); then
		echo "ok $n - $name alone as C++11"
	else
		echo "not ok $n - $name alone as C++11:"; echo "$out" | sed 's/^/#   /'; fail=1
	fi
	fnames=$(grep 'SB_EXPORT' "$header" | grep -v '#' |
		grep -oE '\bsb_[A-Za-z0-9_]+[[:space:]]*\(' | tr -d '( \t' | sort -u)
	{
		echo "#include <$name>"
		echo '#include <cstdio>'
		echo 'typedef void (*fn)();'
		echo 'int main() {'
		echo '  fn all[] = {'
		for f in $fnames; do echo "    reinterpret_cast<fn>(&$f),"; done
		echo '  };'
		echo '  std::printf("%u\n", unsigned(sizeof(all) / sizeof(all[0])));'
		echo '  return 0;'
		echo '}'
	} >"$tmp/link.cc"
	n=$((n + 1))
	# shellcheck disable=SC2086
	if out=$($cxx -std=c++11 -I"$incdir" "$tmp/link.cc" -o "$tmp/link" "$lib" 2>&1) &&
		out=$(LD_LIBRARY_PATH=$(dirname "$lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$tmp/link" 2>&1); then
		echo "ok $n - C++ program links all $out sb_egl_* functions with C linkage and runs"
	else
		echo "not ok $n - C++ program using every sb_egl_* function:"; echo "$out" | sed 's/^/#   /'; fail=1
	fi
fi

if [ $fail -ne 0 ]; then
	echo "FAIL"
	exit 1
fi
echo "PASS: $n checks"
