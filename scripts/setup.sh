#!/usr/bin/env bash
# syncbridge setup: install build + test dependencies and cache the guest kernel.
#
# Idempotent. On Debian 12 (bookworm) it:
#   1. adds a bookworm-backports apt entry that reuses the URIs of the machine's
#      existing Debian entry (no mirror host name lives in this repository);
#   2. installs the toolchain, Mesa 25 / libdrm / wayland from backports, and the
#      test-VM tools (qemu, busybox-static, cpio, xz);
#   3. downloads (does not install) the backports linux-image package and unpacks
#      it into the guest-kernel cache used by scripts/vm/vm-run.sh;
#   4. makes the venus root: a Debian 13 (trixie) root file system, from the same
#      mirror, holding QEMU 10 + virglrenderer 1.1 with venus and its render
#      server (Debian 12's virglrenderer has no venus). scripts/vm/vm-run.sh runs
#      that QEMU for the venus tier (SYNCBRIDGE_VM_GPU=venus); nothing of it is
#      installed on this machine. ~1 min, 1.1 GB; rebuilt when incomplete or when
#      its package list changes.
# On any other system it lists what is missing and exits 1.
#
# Environment:
#   SYNCBRIDGE_CACHE   cache folder (default: ${XDG_CACHE_HOME:-$HOME/.cache}/syncbridge)
#   SYNCBRIDGE_SETUP_SKIP_APT=1   skip apt (for machines already set up by hand)
#   SYNCBRIDGE_SETUP_VENUS=0      do not make the venus root (its tests then fail,
#                                 saying so)
#   SYNCBRIDGE_SETUP_PEERS=0      do not add KWin, mutter, sway and labwc to the venus root
#                                 (the syncobj-peer and proxy-wlroots tests then skip)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${SYNCBRIDGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/syncbridge}
log() { printf 'setup: %s\n' "$*" >&2; }
die() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }

# Packages from plain bookworm. wayland-utils: wayland-info, a stock client of
# the compositor tests; qemu-system-gui + libvirglrenderer1 + libsdl2 (+ xvfb):
# the GPU group's virgl guest (scripts/vm/vm-run.sh, SYNCBRIDGE_VM_GPU=virgl);
# libexpat1-dev: syncbridge-wl-proxy reads the protocol XML with expat (proxy/);
# foot ... mesa-utils: the stock clients of the GPU group's client matrix
# (tests/wayland/meson.build; mesa-utils for glxgears through Xwayland);
# scdoc: the man pages (docs/man/, -Dman_pages); universal-ctags: the function
# lengths that scripts/check-style.py measures (host tests style, style-control);
# wlcs: the Wayland conformance suite run against the example compositor
# (tests/wlcs/, host test wlcs).
base_pkgs=(gcc g++ pkg-config ninja-build python3 git ca-certificates libexpat1-dev
	libvulkan-dev vulkan-tools vulkan-validationlayers libjson-c-dev
	qemu-system-x86 busybox-static cpio xz-utils kmod
	valgrind strace librsvg2-bin glslang-tools xvfb v4l-utils libpng-dev
	clang libclang-rt-14-dev wayland-utils libxkbcommon-dev xkb-data wl-clipboard
	qemu-system-gui libvirglrenderer1 libsdl2-2.0-0 debootstrap universal-ctags
	foot xwayland gtk-4-examples mpv glmark2-es2-wayland mesa-utils fonts-dejavu-core
	gstreamer1.0-tools python3-gi gir1.2-glib-2.0 dbus-daemon plasma-wayland-protocols scdoc
	wlcs)
# Packages whose bookworm-backports version is required (Mesa 25 gives lavapipe
# SYNC_FD semaphores and EGL native fence sync; libdrm 2.4.123 has
# drmSyncobjEventfd; wayland-protocols 1.43 has linux-drm-syncobj-v1;
# PipeWire 1.4 has SPA_META_SyncTimeline and SPA_DATA_SyncObj, bookworm's 0.3.65
# neither).
bp_pkgs=(meson libdrm-dev libdrm2 mesa-vulkan-drivers libegl-mesa0 libgbm1 libgbm-dev
	libgl1-mesa-dri libglapi-mesa libegl-dev libgles-dev
	libwayland-dev libwayland-client0 libwayland-server0 wayland-protocols weston
	pipewire pipewire-bin libpipewire-0.3-dev libspa-0.2-dev gstreamer1.0-pipewire)

# Commands the build and the test VM need; used to explain a non-Debian host.
needed_cmds=(cc meson ninja pkg-config qemu-system-x86_64 cpio xz)
report_missing() {
	local missing=()
	for c in "${needed_cmds[@]}"; do command -v "$c" >/dev/null || missing+=("$c"); done
	pkg-config --exists libdrm 2>/dev/null || missing+=("libdrm (pkg-config)")
	pkg-config --exists vulkan 2>/dev/null || missing+=("vulkan loader headers (pkg-config vulkan)")
	[ -e /usr/bin/busybox ] || [ -e /bin/busybox ] || missing+=("busybox (static)")
	if [ ${#missing[@]} -gt 0 ]; then
		printf 'setup: this is not Debian 12, so nothing was installed automatically.\n' >&2
		printf 'setup: missing: %s\n' "${missing[@]}" >&2
		printf 'setup: install them with your package manager, then put a Linux >= 6.6 kernel\n' >&2
		printf 'setup: package (vmlinuz + modules) under %s/kernel (see docs/testing.md).\n' "$cache" >&2
		exit 1
	fi
	log "non-Debian host, but every needed command is present"
}

. /etc/os-release 2>/dev/null || true
if [ "${ID:-}" != debian ] || [ "${VERSION_CODENAME:-}" != bookworm ]; then
	report_missing
	[ -d "$cache/kernel/boot" ] || die "no guest kernel in $cache/kernel; see docs/testing.md"
	exit 0
fi
# apt-get and the kernel download need root: as a normal user, run again with sudo.
# shellcheck source=common.sh
. "$here/common.sh"
sb_as_root "$here/setup.sh" "$@"
[ "$(id -u)" = 0 ] || die "run as root, or install sudo (apt-get and the kernel download need root)"

# --- 1. backports entry ------------------------------------------------------
# Find the URIs that serve the 'bookworm' suite in the existing sources, in either
# the deb822 (*.sources) or the one-line (*.list) format.
find_debian_uris() {
	local f
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		awk 'BEGIN{RS=""; FS="\n"}
		{ uris=""; suites=""; en=1
		  for (i=1;i<=NF;i++) {
		    if ($i ~ /^URIs:/)    { sub(/^URIs:[ \t]*/,"",$i); uris=$i }
		    if ($i ~ /^Suites:/)  { sub(/^Suites:[ \t]*/,"",$i); suites=" " $i " " }
		    if ($i ~ /^Enabled:[ \t]*no/) en=0
		  }
		  if (en && suites ~ / bookworm /) print uris }' "$f"
	done
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] || continue
		awk '$1=="deb" { for (i=2;i<=NF;i++) if ($i !~ /^\[/ && $i ~ /:\/\//) { if ($(i+1)=="bookworm") print $i; break } }' "$f"
	done
}
bp_file=/etc/apt/sources.list.d/syncbridge-backports.sources
have_bp() { grep -rqsE 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null; }
if ! have_bp; then
	uris=$(find_debian_uris | tr ' ' '\n' | awk 'NF && !seen[$0]++' | tr '\n' ' ')
	[ -n "$uris" ] || die "no apt entry for the 'bookworm' suite found to reuse for bookworm-backports"
	log "adding bookworm-backports from: $uris"
	cat >"$bp_file" <<SRC
# Added by syncbridge scripts/setup.sh: the same URIs as the Debian 'bookworm' entry.
Types: deb
URIs: $uris
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
	rm -f /var/lib/syncbridge-apt-updated
fi

# --- 2. packages -------------------------------------------------------------
export DEBIAN_FRONTEND=noninteractive
apt_install_needed() {
	local want=() p
	for p in "${base_pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || want+=("$p"); done
	# A backports package counts as installed only at its backports version.
	for p in "${bp_pkgs[@]}"; do
		local inst cand
		inst=$(dpkg-query -W -f='${Version}' "$p" 2>/dev/null || true)
		# In the version table a version line ("[***] VERSION PRIO") precedes its sources.
		cand=$(apt-cache policy "$p" 2>/dev/null | awk '
			/^ +(\*\*\* )?[^ ]+ [0-9]+$/ { v = ($1 == "***") ? $2 : $1 }
			/bookworm-backports/ && v { print v; exit }')
		if [ -z "$inst" ] || { [ -n "$cand" ] && [ "$inst" != "$cand" ]; }; then want+=("$p"); fi
	done
	[ ${#want[@]} -eq 0 ] || printf '%s\n' "${want[@]}"
}
if [ "${SYNCBRIDGE_SETUP_SKIP_APT:-0}" != 1 ]; then
	if [ ! -e /var/lib/syncbridge-apt-updated ] || [ -n "$(find /var/lib/syncbridge-apt-updated -mmin +720 2>/dev/null)" ]; then
		log "apt-get update"
		apt-get update -q >/dev/null
		touch /var/lib/syncbridge-apt-updated
	fi
	mapfile -t want < <(apt_install_needed)
	if [ ${#want[@]} -gt 0 ]; then
		log "installing: ${want[*]}"
		apt-get install -y -q --no-install-recommends "${base_pkgs[@]}" >/dev/null
		apt-get install -y -q --no-install-recommends -t bookworm-backports "${bp_pkgs[@]}" >/dev/null
	else
		log "packages already installed"
	fi
fi

# --- 3. guest kernel ---------------------------------------------------------
# linux-image-amd64 is a metapackage: resolve it to the versioned image package.
mkdir -p "$cache"
if [ ! -e "$cache/kernel/.complete" ]; then
	img=$(apt-cache depends -t bookworm-backports linux-image-amd64 2>/dev/null |
		awk '/Depends: linux-image-[0-9]/{print $2; exit}')
	[ -n "$img" ] || die "cannot resolve linux-image-amd64 in bookworm-backports"
	log "downloading guest kernel $img"
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	(cd "$tmp" && apt-get download -q -t bookworm-backports "$img" >/dev/null)
	rm -rf "$cache/kernel"
	mkdir -p "$cache/kernel"
	dpkg-deb -x "$tmp"/*.deb "$cache/kernel"
	ls "$cache"/kernel/boot/vmlinuz-* >/dev/null 2>&1 || die "kernel package has no vmlinuz"
	touch "$cache/kernel/.complete"
fi
log "guest kernel: $(basename "$(ls "$cache"/kernel/boot/vmlinuz-* | head -n1)")"

# --- 4. venus root -----------------------------------------------------------
# The venus tier's host side (docs/testing.md, "The venus guest"): Debian 13's
# QEMU with virtio-gpu venus=true, its render server (virgl-server), lavapipe
# for the host Vulkan it renders on, Mesa GL + Xvfb for QEMU's SDL-GL display.
venus_pkgs=(qemu-system-x86 qemu-system-modules-opengl qemu-system-gui libvirglrenderer1
	virgl-server mesa-vulkan-drivers libgl1-mesa-dri libsdl2-2.0-0)
venus_root=$cache/venus-root
# Added to a complete root in place (no rebuild): Debian 13's validation
# layers (1.4.309), recent enough to check VUID-03254 on the layer's SYNC_FD
# exports (tests/layer/meson.build: layer-validation-trixie-*).
venus_extra_pkgs=(vulkan-validationlayers)
# The real linux-drm-syncobj-v1 peers (issue 35; tests/wayland/syncobj-peer.sh):
# KWin 6.3.6 and mutter 48.7, and Debian 13's wayland-info to list their
# globals. Measured 2026-12-05 on a copy of the root: 68 MB of archives,
# ~7 s download + ~20 s install, +313 MB (223 packages, Qt 6 and GTK 4 among
# them). dbus-run-session (dbus-daemon) is in the root already.
# mutter's screencast (tests/pipewire/pw-screencast.sh) needs PipeWire's
# client modules in the root: without them "Failed to create pipewire
# context" (2026-12-07); the client.conf comes from this machine's PipeWire.
# Peers without linux-drm-syncobj-v1 for syncbridge-wl-proxy to stand in front
# of (tests/wayland/proxy-wlroots.sh): sway 1.10.1 and labwc 0.8.3 (wlroots
# 0.18), and grim for their screenshots (wlr-screencopy). Measured 2026-12-07
# on the root that already had the peers above: 3.5 MB of archives, 13
# packages, ~8 s download + install, +11.7 MB. wayfire 0.9.0 (wlroots 0.17),
# the third (2026-12-07, after those): 2.1 MB of archives, 3 packages, +10.9 MB.
if [ "${SYNCBRIDGE_SETUP_PEERS:-1}" != 0 ]; then
	venus_extra_pkgs+=(kwin-wayland mutter wayland-utils libpipewire-0.3-modules sway labwc grim wayfire)
fi
venus_key=$(printf '%s\n' trixie "${venus_pkgs[@]}" | sha256sum | cut -c1-16)
debian_mirror() { find_debian_uris | tr ' ' '\n' | awk 'NF && $0 !~ /security/ {print; exit}'; }
make_venus_root() {
	local tmp=$venus_root.tmp mirror
	mirror=$(debian_mirror)
	[ -n "$mirror" ] || die "venus root: no apt entry for the 'bookworm' suite to take the mirror from"
	command -v debootstrap >/dev/null || die "venus root: debootstrap is missing (apt-get install debootstrap)"
	log "venus root: debootstrap trixie from $mirror into $venus_root (~1 min)"
	rm -rf "$tmp"
	debootstrap --variant=minbase trixie "$tmp" "$mirror" >"$cache/venus-root.log" 2>&1 ||
		die "venus root: debootstrap failed (the last lines of $cache/venus-root.log:
$(tail -n 5 "$cache/venus-root.log"))"
	# apt in the root needs /proc; unmounted however this ends.
	mount -t proc proc "$tmp/proc"
	local rc=0
	chroot "$tmp" sh -c 'apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" && apt-get clean' \
		sh "${venus_pkgs[@]}" >>"$cache/venus-root.log" 2>&1 || rc=$?
	umount "$tmp/proc"
	[ "$rc" = 0 ] || die "venus root: installing ${venus_pkgs[*]} failed (see $cache/venus-root.log)"
	for f in usr/bin/qemu-system-x86_64 usr/libexec/virgl_render_server etc/ld.so.cache; do
		[ -e "$tmp/$f" ] || die "venus root: $f missing after the install (see $cache/venus-root.log)"
	done
	echo "$venus_key" >"$tmp/.complete"
	rm -rf "$venus_root"
	mv "$tmp" "$venus_root"
}
if [ "${SYNCBRIDGE_SETUP_VENUS:-1}" != 0 ]; then
	if [ "$(cat "$venus_root/.complete" 2>/dev/null)" != "$venus_key" ]; then
		make_venus_root
	fi
	missing_extra=()
	for p in "${venus_extra_pkgs[@]}"; do
		grep -qx "Package: $p" "$venus_root/var/lib/dpkg/status" || missing_extra+=("$p")
	done
	if [ ${#missing_extra[@]} -gt 0 ]; then
		log "venus root: adding ${missing_extra[*]}"
		mount -t proc proc "$venus_root/proc"
		rc=0
		chroot "$venus_root" sh -c 'apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" && apt-get clean' \
			sh "${missing_extra[@]}" >>"$cache/venus-root.log" 2>&1 || rc=$?
		umount "$venus_root/proc"
		[ "$rc" = 0 ] || die "venus root: installing ${missing_extra[*]} failed (see $cache/venus-root.log)"
	fi
	# KWin's screencast (tests/pipewire/pw-screencast.sh --peer kwin) is a
	# plugin in Debian's kwin-common, whose package pulls a desktop's worth
	# of QML modules, themes and daemons the plugin does not load (its
	# libraries are all kwin-wayland's): only the plugin is taken from the
	# package, into KWin's plugin folder.
	kwin_sc=usr/lib/x86_64-linux-gnu/qt6/plugins/kwin/plugins/screencast.so
	if [ "${SYNCBRIDGE_SETUP_PEERS:-1}" != 0 ] && [ ! -e "$venus_root/$kwin_sc" ]; then
		log "venus root: adding KWin's screencast plugin (from kwin-common)"
		rc=0
		rm -rf "$venus_root/tmp/sb-kwin-common"
		mkdir -p "$venus_root/tmp/sb-kwin-common"
		chroot "$venus_root" sh -c 'cd /tmp/sb-kwin-common && apt-get download -q kwin-common' \
			>>"$cache/venus-root.log" 2>&1 || rc=$?
		[ "$rc" = 0 ] || die "venus root: apt-get download kwin-common failed (see $cache/venus-root.log)"
		dpkg-deb -x "$venus_root"/tmp/sb-kwin-common/kwin-common_*.deb "$venus_root/tmp/sb-kwin-common/x"
		[ -e "$venus_root/tmp/sb-kwin-common/x/$kwin_sc" ] || die "venus root: kwin-common has no $kwin_sc"
		install -D -m 644 "$venus_root/tmp/sb-kwin-common/x/$kwin_sc" "$venus_root/$kwin_sc"
		rm -rf "$venus_root/tmp/sb-kwin-common"
	fi
	log "venus root: $venus_root (QEMU $(awk '/^Package: qemu-system-x86$/{p=1} p && /^Version:/{print $2; exit}' "$venus_root/var/lib/dpkg/status"))"
fi
log "done"
