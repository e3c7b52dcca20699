#!/usr/bin/env bash
# meson test wrapper for one VM-tier program (suite vm).
#
#   vm-result.sh --name NAME --timeout S --results RESULTS --vm-run VM_RUN -- CMD [ARGS...]
#
# - native mode (see vm-common.sh): runs CMD here, under `timeout S`;
# - otherwise, when vm-boot ran in this same `meson test` run (run token
#   matches), prints RESULTS/batch/NAME.log (and NAME.dmesg) and exits with
#   RESULTS/batch/NAME.rc: 77 (skip) passes through, 124 = timed out;
# - otherwise (the test was run alone, or the batch guest died before it) boots
#   a guest for this program only, into RESULTS/single/NAME/.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/vm-common.sh"

name= limit= results= vm_run=
while [ $# -gt 0 ]; do
	case $1 in
	--name) name=$2; shift 2 ;;
	--timeout) limit=$2; shift 2 ;;
	--results) results=$2; shift 2 ;;
	--vm-run) vm_run=$2; shift 2 ;;
	--) shift; break ;;
	*) echo "vm-result: unknown argument '$1'" >&2; exit 2 ;;
	esac
done
[ -n "$name" ] && [ -n "$limit" ] && [ -n "$results" ] && [ -n "$vm_run" ] && [ $# -gt 0 ] ||
	{ echo "usage: $0 --name NAME --timeout S --results DIR --vm-run VM_RUN -- CMD [ARGS...]" >&2; exit 2; }

mode=$(sb_vm_mode)
if [ "$mode" = native ]; then
	echo "vm: native mode (host devices), running: $*"
	rc=0
	if [ "$limit" -gt 0 ]; then timeout -k 5 "$limit" "$@" || rc=$?; else "$@" || rc=$?; fi
	[ "$rc" = 124 ] && echo "vm: $name: timed out after ${limit}s"
	exit "$rc"
fi

# Print a finished run's output, then exit with its status.
report() { # DIR HOW
	local d=$1 rc
	g=$(sb_guest_line "$d/guest-info"); echo "vm: $name $2 (${g#vm: })"
	cat "$d/$name.log" 2>/dev/null || true
	if [ -s "$d/$name.dmesg" ]; then
		echo "--- kernel messages during $name ---"
		cat "$d/$name.dmesg"
	fi
	rc=$(cat "$d/$name.rc")
	[[ $rc =~ ^[0-9]+$ ]] || { echo "vm: bad exit status '$rc' in $d/$name.rc"; exit 1; }
	exit "$rc"
}

token=$(sb_run_token)
batch=$results/batch
mkdir -p "$results"
exec 8>"$results/.batch.lock"
flock -s 8
if [ "$(cat "$batch/run-token" 2>/dev/null)" = "$token" ]; then
	[ -f "$batch/$name.rc" ] && report "$batch" "ran in the vm-boot guest"
	if [ ! -s "$batch/guest-info" ]; then
		echo "vm: $name: no result: the vm-boot guest did not come up (see the vm-boot test's log; scripts/setup.sh installs the guest kernel)"
		exit 1
	fi
	if [ -f "$batch/batch.done" ]; then
		echo "vm: $name: no result in the vm-boot batch (not in its list?)"
		exit 1
	fi
	if [ -f "$batch/$name.log" ]; then
		echo "vm: $name: the vm-boot guest stopped while running this program; its output so far:"
		cat "$batch/$name.log"
	else
		echo "vm: $name: the vm-boot guest stopped before this program ran"
	fi
	echo "vm: $name: running it again in a guest of its own"
fi
exec 8>&-

# A guest for this program only.
single=$results/single
mkdir -p "$single"
exec 7>"$single/$name.lock"
flock -x 7
rm -rf "${single:?}/$name"
mkdir -p "$single/$name"
line=$name$'\t'$limit
for w in "$@"; do
	case $w in
	'' | *$'\t'* | *$'\n'*) echo "vm: $name: argument '$w' cannot go in a batch list (empty, TAB or newline)"; exit 1 ;;
	esac
	line+=$'\t'$w
done
printf '%s\n' "$line" >"$single/$name.list"
rc=0
"$vm_run" --batch "$single/$name.list" --results "$single/$name" 2>&1 || rc=$?
if [ ! -f "$single/$name/$name.rc" ]; then
	echo "vm: $name: no result from its guest (vm-run.sh exit status $rc)"
	exit 1
fi
report "$single/$name" "ran in a guest of its own"
