# shellcheck shell=bash
# Shared by vm-boot.sh and vm-result.sh (sourced, bash).

# qemu | native: where the VM tier runs. SYNCBRIDGE_VM=native or qemu forces
# it; otherwise (auto) natively when this host has a vgem DRM node and
# /dev/udmabuf, else in the QEMU guest.
sb_vm_mode() {
	case ${SYNCBRIDGE_VM:-auto} in
	native | qemu) echo "$SYNCBRIDGE_VM" ;;
	auto | '') if sb_host_has_devices; then echo native; else echo qemu; fi ;;
	*)
		echo "vm: SYNCBRIDGE_VM must be auto, qemu or native (got '$SYNCBRIDGE_VM')" >&2
		return 1
		;;
	esac
}

# True when the host has /dev/udmabuf and a DRM node driven by vgem (a bare
# platform device named "vgem", or a device whose bound driver is vgem).
sb_host_has_devices() {
	local c d
	[ -c /dev/udmabuf ] || return 1
	for c in /sys/class/drm/card[0-9]*; do
		[ -e "$c/dev" ] && [ -e "/dev/dri/${c##*/}" ] || continue
		d=$(readlink -f "$c/device" 2>/dev/null) || continue
		d=${d##*/}
		if [ "${d%%.*}" = vgem ]; then return 0; fi
		d=$(readlink "$c/device/driver" 2>/dev/null) || continue
		if [ "${d##*/}" = vgem ]; then return 0; fi
	done
	return 1
}

# A token that names this `meson test` run: every test process of one run has
# the same parent (meson), so its pid + start time (field 22 of
# /proc/PID/stat) + the boot id identify the run.
sb_run_token() {
	local s f boot
	s=$(cat "/proc/$PPID/stat" 2>/dev/null) || { echo "none:$$"; return; }
	s=${s##*) } # drop "pid (comm) ": comm may hold spaces and parentheses
	read -r -a f <<<"$s"
	boot=$(cat /proc/sys/kernel/random/boot_id 2>/dev/null || echo noboot)
	echo "$PPID:${f[19]}:$boot"
}

# First line of a guest-info file (the "vm: guest kernel ..." summary).
sb_guest_line() { head -n1 "$1" 2>/dev/null || true; }
