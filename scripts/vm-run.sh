#!/bin/sh
# SPDX-License-Identifier: MIT
# The test VM's runner lives in scripts/vm/ with the rest of the VM plumbing;
# this path is kept for the commands older notes and issues give.
exec "$(dirname "$0")/vm/vm-run.sh" "$@"
