#!/usr/bin/env bash
# Set everything up, build, and run the whole test suite (host tier + VM tier).
# Ends with one line "N passed, N failed, N skipped" (skips are never passes).
#
#   scripts/run-tests.sh [extra meson test args...]
#   scripts/run-tests.sh --sanitize=asan|tsan|valgrind [--all | extra meson test args...]
#   scripts/run-tests.sh --count TESTLOG.json...
#
# --sanitize=SETUP runs the tests under a hardening setup (docs/reliability.md):
#   asan      AddressSanitizer + UBSan + LeakSanitizer; build folder build-asan
#             (-Db_sanitize=address,undefined)
#   tsan      ThreadSanitizer; build folder build-tsan (-Db_sanitize=thread)
#   valgrind  memcheck; the normal build folder
# By default only the tests that tests/hardening/sanitize.list names for SETUP
# run, on both tiers (the VM tier's guest gets only those programs); --all
# runs every test, and extra meson test arguments replace the selection.
# --count prints the one line for the union of meson testlog.json files (a
# missing file counts as one failure: its run did not happen).
#
# Environment:
#   SYNCBRIDGE_BUILD       build folder (default: build)
#   SYNCBRIDGE_BUILD_ASAN  build folder for --sanitize=asan (default: build-asan)
#   SYNCBRIDGE_BUILD_TSAN  build folder for --sanitize=tsan (default: build-tsan)
#   SYNCBRIDGE_SETUP=0     skip scripts/setup.sh (machine already set up)
#   SYNCBRIDGE_VM          qemu | native | auto (see docs/testing.md)
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$top"

# meson's own summary is not what CI reads: count from the machine-readable logs.
count() {
	python3 - "$@" <<'PY'
import json, sys
passed = failed = skipped = 0
for path in sys.argv[1:]:
    try:
        f = open(path)
    except OSError:
        print(f"run-tests: {path} is missing: counted as one failure", file=sys.stderr)
        failed += 1
        continue
    with f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            r = json.loads(line).get("result")
            if r in ("OK", "EXPECTEDFAIL"):
                passed += 1
            elif r == "SKIP":
                skipped += 1
            else:
                failed += 1
print(f"{passed} passed, {failed} failed, {skipped} skipped")
PY
}

if [ "${1:-}" = --count ]; then
	shift
	count "$@"
	exit 0
fi

sanitize=
all=0
args=()
for a in "$@"; do
	case $a in
	--sanitize=*) sanitize=${a#--sanitize=} ;;
	--all) all=1 ;;
	*) args+=("$a") ;;
	esac
done

build=${SYNCBRIDGE_BUILD:-$top/build}
setup_opts=()
case $sanitize in
'' | valgrind) ;;
asan)
	build=${SYNCBRIDGE_BUILD_ASAN:-$top/build-asan}
	setup_opts=(-Db_sanitize=address,undefined)
	;;
tsan)
	build=${SYNCBRIDGE_BUILD_TSAN:-$top/build-tsan}
	setup_opts=(-Db_sanitize=thread)
	;;
*)
	echo "run-tests: --sanitize wants asan, tsan or valgrind (got '$sanitize')" >&2
	exit 2
	;;
esac

if [ "${SYNCBRIDGE_SETUP:-1}" != 0 ]; then
	bash scripts/setup.sh
fi

if [ -f "$build/build.ninja" ]; then
	meson setup --reconfigure "$build" "${setup_opts[@]}" >/dev/null
else
	meson setup "$build" -Dwerror=true "${setup_opts[@]}" >/dev/null
fi
ninja -C "$build"

testlog=$build/meson-logs/testlog.json
mtest=(meson test -C "$build" --print-errorlogs --num-processes 2)
if [ -n "$sanitize" ]; then
	testlog=$build/meson-logs/testlog-$sanitize.json
	mtest+=(--setup "$sanitize")
fi
rm -f "$testlog"

if [ -n "$sanitize" ] && [ "$all" = 0 ] && [ ${#args[@]} -eq 0 ]; then
	# The selection: every test whose whole name matches one of SETUP's regexes.
	re=$(sed -n "s/^$sanitize:[[:space:]]*//p" tests/hardening/sanitize.list | paste -sd'|')
	[ -n "$re" ] || { echo "run-tests: tests/hardening/sanitize.list has no '$sanitize:' lines" >&2; exit 2; }
	listing=$(meson test -C "$build" --list 2>/dev/null)
	mapfile -t names < <(sed -n 's|^[^ ]* / ||p' <<<"$listing" | grep -E "^($re)\$" || true)
	# vm-boot runs the picked VM-tier programs (SYNCBRIDGE_VM_FILTER) in one guest.
	if sed -n 's|^[^ ]*:vm / ||p' <<<"$listing" | grep -qE "^($re)\$"; then
		names=(vm-boot "${names[@]}")
	fi
	echo "run-tests: --sanitize=$sanitize: ${#names[@]} tests picked by tests/hardening/sanitize.list"
	export SYNCBRIDGE_VM_FILTER=$re
	args=("${names[@]}")
fi

if [ "$sanitize" = valgrind ]; then
	# The setup must be live: a canary under the wrapper reports RUNNING_ON_VALGRIND.
	if ! tests/hardening/valgrind-wrap.sh "$build/tests/hardening/hardening-canary" valgrind; then
		echo "run-tests: the valgrind wrapper is not live (see above)" >&2
		echo "0 passed, 1 failed, 0 skipped"
		exit 1
	fi
fi

rc=0
"${mtest[@]}" "${args[@]}" || rc=$?

count "$testlog"
exit "$rc"
