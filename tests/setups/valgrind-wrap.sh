#!/usr/bin/env bash
# The valgrind test setup's wrapper (meson test --setup valgrind; in the VM
# tier SYNCBRIDGE_VM_WRAPPER puts it before every guest program).
#
#   valgrind-wrap.sh PROGRAM [ARGS...]
#
# Runs PROGRAM under memcheck when it is one of ours (an ELF file outside
# /usr, /bin and /sbin); scripts and system interpreters (bash, python3 — the
# tools' tests) run as they are, since their own errors are not ours. A
# memcheck error or a definite leak makes the exit status 99; 77 (skip) and
# the program's own failures pass through.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

[ $# -ge 1 ] || { echo "usage: $0 PROGRAM [ARGS...]" >&2; exit 2; }
prog=$1
path=$prog
[[ $path == */* ]] || path=$(command -v -- "$path" || echo "$path")
path=$(readlink -f -- "$path" 2>/dev/null || echo "$path")

ours=0
case $path in
/usr/* | /bin/* | /sbin/* | /lib/* | /lib64/*) ;;
*) [ "$(head -c 4 -- "$path" 2>/dev/null | od -An -tx1 | tr -d ' \n')" = 7f454c46 ] && ours=1 ;;
esac
[ "$ours" = 1 ] || exec "$@"

command -v valgrind >/dev/null || { echo "valgrind-wrap: valgrind is not installed (scripts/setup.sh installs it)" >&2; exit 1; }
exec valgrind --quiet --error-exitcode=99 --exit-on-first-error=no \
	--leak-check=full --show-leak-kinds=definite --errors-for-leak-kinds=definite \
	--track-origins=yes --num-callers=30 --child-silent-after-fork=yes \
	--suppressions="$here/valgrind.supp" -- "$@"
