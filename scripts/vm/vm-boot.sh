#!/usr/bin/env bash
# meson test 'vm-boot' (suite vm, runs first, alone): boots the QEMU guest once
# and runs every VM-tier program in it (scripts/vm/vm-run.sh --batch), into
# RESULTS/batch/. The per-program tests (vm-result.sh) then only report those
# results, as long as they belong to the same `meson test` run (run token).
#
#   vm-boot.sh VM_RUN LISTFILE RESULTS [-- PROGRAMS...]
# PROGRAMS are ignored: they are there so that meson builds them first.
#
# Environment (scripts/run-tests.sh --sanitize and the test setups use them):
#   SYNCBRIDGE_VM_FILTER        extended regex: run only the programs whose whole
#                               name matches (name the same tests to `meson test`:
#                               the others find no result and fail)
#   SYNCBRIDGE_VM_WRAPPER       words put before every program (e.g. a valgrind
#                               wrapper); the program's path follows them
#   SYNCBRIDGE_VM_TIMEOUT_SCALE whole number multiplying every program's limit
#
# When the guest dies part-way (kernel panic, hang), the program it was running
# is recorded in RESULTS/batch/crashed (its test re-runs it in a guest of its
# own) and a new guest runs the rest, up to 3 times.
# Fails when the guest did not come up or the batch did not finish in one go;
# the programs' own failures are reported by their own tests.
set -euo pipefail

# The whole script is parsed before it runs (it runs for minutes; an edit of
# this file meanwhile must not change what the running copy does).
main() {
	local here vm_run list results mode
	here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
	. "$here/vm-common.sh"

	[ $# -ge 3 ] || { echo "usage: $0 VM_RUN LISTFILE RESULTS [-- PROGRAMS...]" >&2; exit 2; }
	vm_run=$1 list=$2 results=$3

	mode=$(sb_vm_mode)
	if [ "$mode" = native ]; then
		echo "vm: native mode: this host has vgem and /dev/udmabuf (or SYNCBRIDGE_VM=native);"
		echo "vm: the VM-tier programs run directly on the host, no guest is booted"
		exit 0
	fi

	# token and batch are global: the EXIT trap uses them.
	token=$(sb_run_token)
	batch=$results/batch
	mkdir -p "$results"
	exec 8>"$results/.batch.lock"
	flock -x 8
	rm -rf "$batch" "$results/guest-info.last"
	mkdir -p "$batch"
	# However this script ends, the per-program tests of this run must find the
	# token: without it each would boot a guest of its own.
	trap 'echo "$token" >"$batch/run-token"' EXIT

	local filter scale wrap sel l f alone
	filter=${SYNCBRIDGE_VM_FILTER:-} scale=${SYNCBRIDGE_VM_TIMEOUT_SCALE:-1}
	read -r -a wrap <<<"${SYNCBRIDGE_VM_WRAPPER:-}"
	[[ $scale =~ ^[1-9][0-9]*$ ]] || { echo "vm-boot: SYNCBRIDGE_VM_TIMEOUT_SCALE must be a whole number >= 1" >&2; exit 1; }
	if [ -n "$filter" ] || [ ${#wrap[@]} -gt 0 ] || [ "$scale" != 1 ]; then
		sel=$results/vm-tests.selected.list
		: >"$sel"
		while IFS= read -r l || [ -n "$l" ]; do
			[[ -z ${l//[$' \t']/} || $l == \#* ]] && continue
			IFS=$'\t' read -r -a f <<<"$l"
			[ -z "$filter" ] || [[ ${f[0]} =~ ^($filter)$ ]] || continue
			alone=
			[[ ${f[1]} =~ (:alone|:onecpu)$ ]] && alone=${BASH_REMATCH[1]}
			f=("${f[0]}" "$((${f[1]%$alone} * scale))$alone" "${wrap[@]}" "${f[@]:2}")
			(IFS=$'\t'; printf '%s\n' "${f[*]}") >>"$sel"
		done <"$list"
		echo "vm-boot: $(grep -c . "$sel") programs selected${filter:+ by SYNCBRIDGE_VM_FILTER='$filter'}${wrap[0]:+, wrapped in '${wrap[*]}'}, limits x$scale"
		list=$sel
	fi

	local rc attempt=1 todo=$list first_rc=0 line name crashed
	while :; do
		rc=0
		"$vm_run" --batch "$todo" --results "$batch" 2>&1 || rc=$?
		[ "$attempt" = 1 ] && first_rc=$rc
		# vm-run.sh clears guest-info at the start: keep the first guest's.
		if [ -s "$batch/guest-info" ]; then
			cp "$batch/guest-info" "$results/guest-info.last"
		elif [ -s "$results/guest-info.last" ] && [ "$attempt" != 1 ]; then
			cp "$results/guest-info.last" "$batch/guest-info"
			echo "vm-boot: the restarted guest did not come up; the remaining programs run each in a guest of their own"
			break
		fi
		[ -f "$batch/batch.done" ] && break
		[ -s "$batch/guest-info" ] || break # the guest never came up
		# The first program without an exit status is the one the guest died
		# in; the ones after it never ran.
		crashed=
		: >"$results/vm-tests.rest.list"
		while IFS= read -r line || [ -n "$line" ]; do
			[[ -z ${line//[$' \t']/} || $line == \#* ]] && continue
			name=${line%%$'\t'*}
			[ -f "$batch/$name.rc" ] && continue
			if [ -z "$crashed" ]; then
				crashed=$name
				echo "$name" >>"$batch/crashed"
				echo "vm-boot: the guest died while running $name (its test re-runs it alone)"
			else
				printf '%s\n' "$line" >>"$results/vm-tests.rest.list"
			fi
		done <"$todo"
		[ -s "$results/vm-tests.rest.list" ] || break
		attempt=$((attempt + 1))
		if [ "$attempt" -gt 4 ]; then
			echo "vm-boot: giving up after 3 restarts; the remaining programs run each in a guest of their own"
			break
		fi
		mv "$results/vm-tests.rest.list" "$results/vm-tests.rest$attempt.list"
		todo=$results/vm-tests.rest$attempt.list
		echo "vm-boot: booting a new guest for the $(grep -c . "$todo") programs left"
	done

	line=$(sb_guest_line "$batch/guest-info")
	if [ -z "$line" ]; then
		echo "vm-boot: the guest did not come up (vm-run.sh exit status $rc); if the kernel is missing, run scripts/setup.sh" >&2
		exit 1
	fi
	if [ "$attempt" != 1 ] || [ "$first_rc" != 0 ]; then
		echo "vm-boot: the guest stopped before the batch finished (vm-run.sh exit status $first_rc)" >&2
		exit 1
	fi
	echo "vm-boot: ok: $line"
	exit 0
}

main "$@"
