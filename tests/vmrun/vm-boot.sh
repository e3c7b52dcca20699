#!/usr/bin/env bash
# meson test 'vm-boot' (suite vm, runs first, alone): boots the QEMU guest once
# and runs every VM-tier program in it (scripts/vm-run.sh --batch), into
# RESULTS/batch/. The per-program tests (vm-result.sh) then only report those
# results, as long as they belong to the same `meson test` run (run token).
#
#   vm-boot.sh VM_RUN LISTFILE RESULTS [-- PROGRAMS...]
# PROGRAMS are ignored: they are there so that meson builds them first.
# Fails when the guest did not come up or the batch did not finish; the
# programs' own failures are reported by their own tests.
set -euo pipefail
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

token=$(sb_run_token)
mkdir -p "$results"
exec 8>"$results/.batch.lock"
flock -x 8
rm -rf "$results/batch"
mkdir -p "$results/batch"

rc=0
"$vm_run" --batch "$list" --results "$results/batch" 2>&1 || rc=$?
# Written even when the guest failed: the per-program tests then fail at once
# with a pointer here instead of each booting a guest of its own.
echo "$token" >"$results/batch/run-token"

line=$(sb_guest_line "$results/batch/guest-info")
if [ -z "$line" ]; then
	echo "vm-boot: the guest did not come up (vm-run.sh exit status $rc); if the kernel is missing, run scripts/setup.sh" >&2
	exit 1
fi
if [ "$rc" != 0 ] || [ ! -f "$results/batch/batch.done" ]; then
	echo "vm-boot: the guest stopped before the batch finished (vm-run.sh exit status $rc); unfinished programs will each be retried in a guest of their own" >&2
	exit 1
fi
echo "vm-boot: ok: $line"
