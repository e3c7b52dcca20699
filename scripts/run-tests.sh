#!/usr/bin/env bash
# Set everything up, build, and run the whole test suite (host tier + VM tier).
# Ends with one line "N passed, N failed, N skipped" (skips are never passes).
#
#   scripts/run-tests.sh [--repeat N] [--load] [extra meson test args...]
#   scripts/run-tests.sh --sanitize=asan|tsan|valgrind [--repeat N] [--load] [--all | extra meson test args...]
#   scripts/run-tests.sh --count TESTLOG.json...
#   scripts/run-tests.sh --report TESTLOG.json...
#
# --sanitize=SETUP runs the tests under a hardening setup (docs/reliability.md):
#   asan      AddressSanitizer + UBSan + LeakSanitizer; build folder build-asan
#             (-Db_sanitize=address,undefined)
#   tsan      ThreadSanitizer; build folder build-tsan (-Db_sanitize=thread)
#   valgrind  memcheck; the normal build folder
# By default only the tests that tests/setups/sanitize.list names for SETUP
# run, on both tiers (the VM tier's guest gets only those programs); --all
# runs every test, and extra meson test arguments replace the selection.
# --count prints the one line for the union of meson testlog.json files (a
# missing file counts as one failure: its run did not happen).
# --report prints each failed result with the end of its output (nothing when
# all passed): .ci/run prints it just before its count.
#
# Stress runs (docs/testing.md, "Stress runs: --repeat and --load"):
#   --repeat N  run the chosen tests N times, each a new `meson test` run (so
#               a new guest boot: vm-boot's run token is meson's pid and start
#               time), each with its own log (meson-logs/testlog-runK[-SETUP].json);
#               then a table of the tests that failed in any run (how many of
#               the N), and the last line counted over all runs. Exit status
#               non-zero if any run failed.
#   --load      a busy loop on every host core (nproc of them, nice 0) while
#               the tests run, stopped on exit (also on Ctrl-C or an error).
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

# meson's own summary is not what CI reads: count from the machine-readable
# logs; after --repeat, the failure table (scripts/testlog.py).
count() { python3 "$top/scripts/testlog.py" count "$@"; }
failure_table() { python3 "$top/scripts/testlog.py" failures "$@"; }

if [ "${1:-}" = --count ]; then
	shift
	count "$@"
	exit 0
fi
if [ "${1:-}" = --report ]; then
	shift
	python3 "$top/scripts/testlog.py" report "$@"
	exit 0
fi

# Setup installs packages: as a normal user, run this script again with sudo
# (SYNCBRIDGE_SETUP=0 runs as whoever calls it).
if [ "${SYNCBRIDGE_SETUP:-1}" != 0 ]; then
	# shellcheck source=common.sh
	. "$top/scripts/common.sh"
	sb_as_root "$top/scripts/run-tests.sh" "$@"
fi

sanitize=
all=0
repeat=
load=0
args=()
while [ $# -gt 0 ]; do
	case $1 in
	--sanitize=*) sanitize=${1#--sanitize=} ;;
	--all) all=1 ;;
	--repeat=*) repeat=${1#--repeat=} ;;
	--repeat)
		[ $# -ge 2 ] || { echo "run-tests: --repeat needs a count" >&2; exit 2; }
		repeat=$2
		shift
		;;
	--load) load=1 ;;
	*) args+=("$1") ;;
	esac
	shift
done
if [ -n "$repeat" ] && ! [[ $repeat =~ ^[1-9][0-9]*$ ]]; then
	echo "run-tests: --repeat wants a whole number >= 1 (got '$repeat')" >&2
	exit 2
fi

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
	re=$(sed -n "s/^$sanitize:[[:space:]]*//p" tests/setups/sanitize.list | paste -sd'|')
	[ -n "$re" ] || { echo "run-tests: tests/setups/sanitize.list has no '$sanitize:' lines" >&2; exit 2; }
	listing=$(meson test -C "$build" --list 2>/dev/null)
	mapfile -t names < <(sed -n 's|^[^ ]* / ||p' <<<"$listing" | grep -E "^($re)\$" || true)
	# vm-boot runs the picked VM-tier programs (SYNCBRIDGE_VM_FILTER) in one guest.
	# (meson lists "project:vm+COMPONENT[+CONCERN] / NAME" for them.)
	# (Not `sed | grep -q` under pipefail: grep -q stops at its first match,
	# sed dies of SIGPIPE, the pipeline fails, and every program booted a
	# guest of its own: 82 boots in the asan run.)
	if grep -qE "^($re)\$" < <(sed -En 's|^[^ ]*:vm(\+[^ ]*)? / ||p' <<<"$listing"); then
		names=(vm-boot "${names[@]}")
	fi
	echo "run-tests: --sanitize=$sanitize: ${#names[@]} tests picked by tests/setups/sanitize.list"
	export SYNCBRIDGE_VM_FILTER=$re
	args=("${names[@]}")
fi

if [ "$sanitize" = valgrind ]; then
	# The setup must be live: a canary under the wrapper reports RUNNING_ON_VALGRIND.
	if ! tests/setups/valgrind-wrap.sh "$build/tests/core/hardening-canary" valgrind; then
		echo "run-tests: the valgrind wrapper is not live (see above)" >&2
		echo "0 passed, 1 failed, 0 skipped"
		exit 1
	fi
fi

# --load: a busy loop per host core for as long as the tests run. The trap
# stops them however this script ends (an error, Ctrl-C, a kill).
hogs=()
stop_load() {
	if [ ${#hogs[@]} -gt 0 ]; then
		kill "${hogs[@]}" 2>/dev/null || true
		wait "${hogs[@]}" 2>/dev/null || true
		hogs=()
	fi
}
if [ "$load" = 1 ]; then
	trap stop_load EXIT
	trap 'stop_load; exit 130' INT
	trap 'stop_load; exit 143' TERM
	ncpu=$(nproc)
	for ((i = 0; i < ncpu; i++)); do
		nice -n 0 sh -c 'while :; do :; done' &
		hogs+=($!)
	done
	echo "run-tests: --load: $ncpu busy loops (pids ${hogs[*]})"
fi

rc=0
if [ -z "$repeat" ]; then
	"${mtest[@]}" "${args[@]}" || rc=$?
	stop_load
	count "$testlog"
	exit "$rc"
fi

# --repeat N: N separate meson runs, each with its own log. A new meson
# process is a new run token, so vm-boot boots a new guest every time and
# the per-program tests read only that run's results.
logs=()
for ((k = 1; k <= repeat; k++)); do
	base=testlog-run$k
	log=$build/meson-logs/$base${sanitize:+-$sanitize}.json
	rm -f "$log"
	logs+=("$log")
	echo "run-tests: run $k of $repeat"
	"${mtest[@]}" --logbase "$base" "${args[@]}" || rc=1
done
stop_load
failure_table "${logs[@]}"
line=$(count "${logs[@]}")
echo "$line"
case $line in
*" 0 failed,"*) ;;
*) rc=1 ;;
esac
exit "$rc"
