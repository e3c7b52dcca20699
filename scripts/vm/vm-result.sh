#!/usr/bin/env bash
# meson test wrapper for one VM-tier program (suite vm).
#
#   vm-result.sh --name NAME --timeout S --results RESULTS --vm-run VM_RUN -- CMD [ARGS...]
#
# - native mode (see vm-common.sh): runs CMD here, under `timeout S`;
# - otherwise, when vm-boot ran in this same `meson test` run (run token
#   matches), prints RESULTS/batch/NAME.log (and NAME.dmesg) and exits with
#   RESULTS/batch/NAME.rc: 77 (skip) passes through, 124 = timed out;
# - otherwise (the test was run alone, or the batch guest died in or before
#   it) boots a guest for this program only, into RESULTS/single/NAME/.
# SYNCBRIDGE_VM_WRAPPER and SYNCBRIDGE_VM_TIMEOUT_SCALE (see vm-boot.sh) apply
# to the last two cases too.
set -euo pipefail

# Parsed whole before it runs (see vm-boot.sh).
main() {
	local here name='' limit='' results='' vm_run='' mode scale wrap
	here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
	. "$here/vm-common.sh"

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
	if [ -z "$name" ] || [ -z "$limit" ] || [ -z "$results" ] || [ -z "$vm_run" ] || [ $# -eq 0 ]; then
		echo "usage: $0 --name NAME --timeout S --results DIR --vm-run VM_RUN -- CMD [ARGS...]" >&2
		exit 2
	fi

	scale=${SYNCBRIDGE_VM_TIMEOUT_SCALE:-1}
	[[ $scale =~ ^[1-9][0-9]*$ ]] || { echo "vm: SYNCBRIDGE_VM_TIMEOUT_SCALE must be a whole number >= 1"; exit 1; }
	read -r -a wrap <<<"${SYNCBRIDGE_VM_WRAPPER:-}"

	mode=$(sb_vm_mode)
	if [ "$mode" = native ]; then
		limit=$((limit * scale))
		echo "vm: native mode (host devices), running: ${wrap[*]} $*"
		local rc=0
		if [ "$limit" -gt 0 ]; then
			timeout -k 5 "$limit" "${wrap[@]}" "$@" || rc=$?
		else
			"${wrap[@]}" "$@" || rc=$?
		fi
		[ "$rc" != 124 ] || echo "vm: $name: timed out after ${limit}s"
		exit "$rc"
	fi

	local token batch
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
		if grep -qxF "$name" "$batch/crashed" 2>/dev/null; then
			echo "vm: $name: the vm-boot guest died while running this program; its output so far:"
			cat "$batch/$name.log" 2>/dev/null || true
			echo "vm: $name: running it again in a guest of its own"
		elif [ -f "$batch/batch.done" ]; then
			echo "vm: $name: no result in the vm-boot batch (left out by SYNCBRIDGE_VM_FILTER?)"
			exit 1
		else
			echo "vm: $name: the vm-boot guest stopped before this program ran; running it in a guest of its own"
		fi
	fi
	exec 8>&-

	# A guest for this program only.
	local single=$results/single line w rc=0
	mkdir -p "$single"
	exec 7>"$single/$name.lock"
	flock -x 7
	rm -rf "${single:?}/$name"
	mkdir -p "$single/$name"
	line=$name$'\t'$((limit * scale))
	for w in "${wrap[@]}" "$@"; do
		case $w in
		'' | *$'\t'* | *$'\n'*) echo "vm: $name: argument '$w' cannot go in a batch list (empty, TAB or newline)"; exit 1 ;;
		esac
		line+=$'\t'$w
	done
	printf '%s\n' "$line" >"$single/$name.list"
	"$vm_run" --batch "$single/$name.list" --results "$single/$name" 2>&1 || rc=$?
	if [ ! -f "$single/$name/$name.rc" ]; then
		if [ -s "$single/$name/$name.log" ]; then
			echo "vm: $name: its output before the guest stopped:"
			cat "$single/$name/$name.log"
		fi
		echo "vm: $name: no result from its guest (vm-run.sh exit status $rc)"
		exit 1
	fi
	report "$single/$name" "ran in a guest of its own"
}

# Print a finished run's output (DIR/NAME.log, NAME.dmesg), then exit with its
# status. Uses $name.
report() { # DIR HOW
	local d=$1 rc g
	g=$(sb_guest_line "$d/guest-info")
	echo "vm: $name $2 (${g#vm: })"
	cat "$d/$name.log" 2>/dev/null || true
	if [ -s "$d/$name.dmesg" ]; then
		echo "--- kernel messages during $name ---"
		cat "$d/$name.dmesg"
	fi
	rc=$(cat "$d/$name.rc")
	[[ $rc =~ ^[0-9]+$ ]] || { echo "vm: bad exit status '$rc' in $d/$name.rc"; exit 1; }
	exit "$rc"
}

main "$@"
