#!/usr/bin/env bash
# Run a command, or a batch of tests, as root in a QEMU guest with a real
# kernel (vgem, udmabuf, dma-heap, virtio-gpu): the syncbridge VM test tier.
#
#   scripts/vm/vm-run.sh [OPTIONS] -- CMD [ARGS...]
#   scripts/vm/vm-run.sh [OPTIONS] --batch LISTFILE --results DIR
#   scripts/vm/vm-run.sh [OPTIONS] --interactive [-- CMD [ARGS...]]   (default CMD: /bin/sh -i)
#
# Options:
#   --timeout SECONDS  kill QEMU after this long (default 600; in batch mode 120 +
#                      the sum of the tests' limits + 5 each); 0 = no limit
#   --results DIR      the folder shared read-write with the guest; it appears
#                      in the guest at the same path. Batch results land here.
#                      Default for CMD mode: a temporary folder, removed after.
#   --batch LISTFILE   run every test in LISTFILE in one guest boot (see below)
#   -i, --interactive  attach the terminal to the guest console (a shell, or
#                      CMD); quit the shell to power off, or Ctrl-A x
#   -q, --quiet        no "vm:" status lines from the host side
#   -h, --help
#
# The guest sees the host's root file system read-only with a throw-away tmpfs
# overlay on top, so build-tree paths are the same on both sides. CMD runs in
# the same working directory, with PATH, HOME, LANG, LC_*, TERM, TZ,
# LD_LIBRARY_PATH, *SAN_OPTIONS, MALLOC_PERTURB_ and every variable starting
# with SYNCBRIDGE_ SB_ VK_ MESA LIBGL EGL GALLIUM LP_ MESON passed through, plus
# the names in $SYNCBRIDGE_VM_ENV; XDG_RUNTIME_DIR is /run/user/0 and
# SYNCBRIDGE_VM_GUEST=1. CMD's stdout and stderr stream to this script's stdout
# and stderr; the exit status is CMD's. 125 means the guest gave no exit
# status (it did not boot, crashed, or ran out of time).
#
# LISTFILE: one test per line, fields separated by TABs:
#   NAME<TAB>TIMEOUT_S<TAB>ARG0[<TAB>ARG1...]
# NAME: [A-Za-z0-9][A-Za-z0-9._+-]*; TIMEOUT_S: whole seconds, 0 = no limit,
# followed by ":alone" for a test that must have no other test beside it, or
# ":onecpu" for one that runs alone with every guest CPU but the first taken
# offline (tests that make the kernel live-patch its code, see batch.sh);
# ARG0 is the program (a path, or a name looked up in PATH). Arguments are
# taken literally (no quoting); they cannot be empty or contain TABs or
# newlines. Blank lines and lines starting with '#' are ignored. The guest
# starts the tests in order, $SYNCBRIDGE_VM_JOBS at a time (default: one per
# guest CPU; an ":alone" test waits for the others and runs by itself), and
# writes DIR/NAME.log (stdout + stderr), DIR/NAME.rc (exit status; 124 = timed
# out) and DIR/NAME.dmesg (kernel messages logged while the test ran, if any;
# with tests side by side they may be another's, and the file names the tests
# that were running), then DIR/guest-info and DIR/batch.done. The exit
# status of a batch run is 0 when batch.done was written, whatever the tests'
# results, and 125 otherwise.
#
# Environment:
#   SYNCBRIDGE_CACHE       cache folder (default ${XDG_CACHE_HOME:-$HOME/.cache}/syncbridge)
#   SYNCBRIDGE_KERNEL_DIR  unpacked kernel package (default $SYNCBRIDGE_CACHE/kernel)
#   SYNCBRIDGE_VM_MODULES  extra kernel modules to load, e.g. "vivid"
#   SYNCBRIDGE_VM_ENV      extra variable names to pass through
#   SYNCBRIDGE_VM_MEM      guest memory (default 2G); SYNCBRIDGE_VM_CPUS (default 2)
#   SYNCBRIDGE_VM_JOBS     batch mode: tests run side by side (default: the guest's
#                          CPUs; 1 = one after the other)
#   SYNCBRIDGE_VM_APPEND   more kernel command line (e.g. loglevel=7 to see kernel
#                          messages, sb.debug for the guest's stage times;
#                          drm_kms_helper.fbdev_emulation=1 gives the guest its
#                          framebuffer console back, see "# --- boot")
#   SYNCBRIDGE_VM_PVH=0    boot the compressed vmlinuz instead of the cached ELF
#                          vmlinux (PVH entry, ~1.5 s faster under TCG)
#   SYNCBRIDGE_VM_ACCEL    QEMU -accel value (default tcg; tcg,thread=single runs
#                          all vCPUs in one host thread)
#   SYNCBRIDGE_VM_BOOT_TRIES  boots to try when the guest dies before starting
#                          the job (default 2)
#   SYNCBRIDGE_VM_TMP      tmpfs | host: the guest's /tmp (default: host when the
#                          working directory or the command is under /tmp, else tmpfs)
#   SYNCBRIDGE_VM_GPU      plain (default): a 2D virtio-gpu | virgl: virtio-gpu-gl, its
#                          3D commands rendered by the host's GL (virglrenderer) —
#                          the guest gets Mesa's virgl driver, a real asynchronous
#                          GPU. QEMU then needs an SDL display with GL (QEMU's
#                          egl-headless needs a host render node, which this
#                          machine lacks): a private Xvfb is started for it.
#                          Needs qemu-system-gui, libvirglrenderer1, libsdl2 and
#                          xvfb (scripts/setup.sh); QEMU 7.2 and 10 both work.
#                          | venus: virtio-gpu with venus=true and blob memory, QEMU
#                          and virglrenderer from the venus root (scripts/setup.sh,
#                          Debian 13; scripts/vm/venus-qemu.sh): the guest gets
#                          Mesa's venus Vulkan driver, rendering on the host's
#                          lavapipe, and virgl GL on the same device. Venus has
#                          dma-buf memory and SYNC_FD semaphores only where the
#                          host's lavapipe can export dma-bufs, which needs
#                          /dev/udmabuf: on a host without it the venus guest is
#                          booted inside the plain guest (nested; see
#                          SYNCBRIDGE_VM_VENUS_NEST). Slow: the inner guest boots
#                          in ~2 min under TCG in TCG.
#   SYNCBRIDGE_VM_VENUS_NEST  auto (default: nest when there is no /dev/udmabuf) | 1 | 0
#   SYNCBRIDGE_VM_OUTER_MEM   the plain guest's memory when it hosts the venus guest
#                          (default 6G: the venus guest's 2G + its host's lavapipe)
set -euo pipefail

# One compound command: bash parses the whole script before running it, so an
# edit of this file while a long batch runs cannot change the running copy.
{
me=vm-run.sh
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
guest_dir=$here/guest
cache=${SYNCBRIDGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/syncbridge}
kdir=${SYNCBRIDGE_KERNEL_DIR:-$cache/kernel}
# Modules the guest needs, in load order; dependencies are added from modinfo.
base_modules=(netfs 9pnet 9pnet_virtio 9p overlay drm drm_kms_helper drm_shmem_helper
	vgem virtio_dma_buf virtio-gpu)

quiet=0
say() { [ "$quiet" = 1 ] || printf 'vm: %s\n' "$*" >&2; }
# sb.debug on the guest's command line (SYNCBRIDGE_VM_APPEND): this script's
# stage times too, in seconds since it started.
start_ns=$(date +%s%N)
stamp() {
	case " ${SYNCBRIDGE_VM_APPEND:-} " in
	*" sb.debug "*) say "$(awk -v n="$(date +%s%N)" -v s="$start_ns" 'BEGIN { printf "%.2f", (n - s) / 1e9 }')s (host) $*" ;;
	esac
}
die() { printf '%s: error: %s\n' "$me" "$*" >&2; exit 125; }
usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; }

timeout_s=
results=
listfile=
interactive=0
while [ $# -gt 0 ]; do
	case $1 in
	--timeout) [ $# -ge 2 ] || die "--timeout needs a value"; timeout_s=$2; shift 2 ;;
	--timeout=*) timeout_s=${1#*=}; shift ;;
	--results) [ $# -ge 2 ] || die "--results needs a value"; results=$2; shift 2 ;;
	--results=*) results=${1#*=}; shift ;;
	--batch) [ $# -ge 2 ] || die "--batch needs a value"; listfile=$2; shift 2 ;;
	--batch=*) listfile=${1#*=}; shift ;;
	-i | --interactive) interactive=1; shift ;;
	-q | --quiet) quiet=1; shift ;;
	-h | --help) usage; exit 0 ;;
	--) shift; break ;;
	*) die "unknown option '$1' (the command goes after --; see --help)" ;;
	esac
done
cmd=("$@")

if [ -n "$listfile" ]; then
	[ ${#cmd[@]} -eq 0 ] || die "--batch takes no command"
	[ "$interactive" = 0 ] || die "--batch and --interactive do not mix"
	[ -n "$results" ] || die "--batch needs --results DIR"
	[ -f "$listfile" ] || die "list file '$listfile' not found"
	mode=batch
elif [ "$interactive" = 1 ]; then
	[ ${#cmd[@]} -gt 0 ] || cmd=(/bin/sh -i)
	[ -t 0 ] && [ -t 1 ] || die "--interactive needs a terminal on stdin and stdout"
	mode=shell
else
	[ ${#cmd[@]} -gt 0 ] || die "no command given (usage: $me [--timeout S] [--results DIR] -- CMD [ARGS...])"
	mode=run
fi
if [ -n "$timeout_s" ]; then
	[[ $timeout_s =~ ^[0-9]+$ ]] || die "--timeout wants whole seconds, got '$timeout_s'"
fi

# --- host tools and the kernel ----------------------------------------------
qemu=${SYNCBRIDGE_QEMU:-qemu-system-x86_64}
command -v "$qemu" >/dev/null || die "$qemu not found; run scripts/setup.sh"
gpu=${SYNCBRIDGE_VM_GPU:-plain}
qemu_wrap=()
hostroot_share=/
case $gpu in
plain) gpu_args=(-device virtio-gpu-pci -display none) ;;
virgl)
	command -v Xvfb >/dev/null || die "SYNCBRIDGE_VM_GPU=virgl needs Xvfb; run scripts/setup.sh"
	gpu_args=(-device virtio-gpu-gl-pci -display sdl,gl=on) ;;
venus)
	venus_root=$cache/venus-root
	[ -f "$venus_root/.complete" ] || die "SYNCBRIDGE_VM_GPU=venus needs the venus root ($venus_root); run scripts/setup.sh"
	command -v Xvfb >/dev/null || die "SYNCBRIDGE_VM_GPU=venus needs Xvfb; run scripts/setup.sh"
	nest=${SYNCBRIDGE_VM_VENUS_NEST:-auto}
	if [ "$nest" = auto ]; then
		nest=0
		[ -c /dev/udmabuf ] || nest=1
	fi
	if [ "$nest" = 1 ]; then
		[ "${SYNCBRIDGE_VM_GUEST:-0}" != 1 ] || die "SYNCBRIDGE_VM_VENUS_NEST=1 inside a guest: would nest forever"
		# This same script, in the plain guest (which has udmabuf), runs the
		# venus guest. Its results go to RESULTS/.venus (the plain guest's own
		# control files are RESULTS/.vm) and are moved up when it is done.
		[ "$interactive" = 0 ] || die "SYNCBRIDGE_VM_GPU=venus: --interactive is not supported when nested"
		[ -n "$results" ] || results=$(mktemp -d "${TMPDIR:-/tmp}/sb-vm-venus.XXXXXX")
		mkdir -p "$results" && results=$(cd "$results" && pwd -P)
		inner=("$here/vm-run.sh" --results "$results/.venus")
		[ -z "$timeout_s" ] || inner+=(--timeout "$timeout_s")
		[ "$quiet" = 0 ] || inner+=(-q)
		if [ -n "$listfile" ]; then inner+=(--batch "$(cd "$(dirname "$listfile")" && pwd -P)/${listfile##*/}"); else inner+=(-- "${cmd[@]}"); fi
		# The plain guest's limit: the venus guest's (given, or the batch's
		# sum as below) + its boot under TCG in TCG.
		outer_t=${timeout_s:-600}
		if [ -z "$timeout_s" ] && [ -n "$listfile" ]; then
			outer_t=$(awk -F'\t' 'NF >= 3 && $1 !~ /^#/ { sub(/:(alone|onecpu)$/, "", $2); s += $2 + 5 } END { print s + 420 }' "$listfile")
		fi
		[ "$outer_t" = 0 ] || outer_t=$((outer_t + 300))
		say "venus: no /dev/udmabuf here: the venus guest runs inside the plain guest"
		rm -rf "$results/.venus"
		mkdir -p "$results/.venus"
		rc=0
		SYNCBRIDGE_VM_GPU=plain SYNCBRIDGE_VM_VENUS_NEST=0 SYNCBRIDGE_VM_MEM=${SYNCBRIDGE_VM_OUTER_MEM:-6G} \
			"$here/vm-run.sh" --timeout "$outer_t" --results "$results" -- \
			env SYNCBRIDGE_VM_GPU=venus SYNCBRIDGE_VM_MEM="${SYNCBRIDGE_VM_MEM:-2G}" "${inner[@]}" || rc=$?
		# The venus guest's files (NAME.log/.rc/.dmesg, guest-info, batch.done) replace the plain guest's.
		if [ -d "$results/.venus" ]; then
			for f in "$results/.venus"/*; do [ -e "$f" ] && mv -f "$f" "$results/"; done
			rm -rf "$results/.venus"
		fi
		exit "$rc"
	fi
	qemu_wrap=("$here/venus-qemu.sh" "$venus_root" /run/sb-venus-hostroot)
	# Nested (this is the plain guest): a program of the venus guest that
	# times out asks for the stacks of its GPU's host side (host_dump below).
	[ "${SYNCBRIDGE_VM_GUEST:-0}" != 1 ] || export SYNCBRIDGE_VM_HOST_DUMP=1
	hostroot_share=/run/sb-venus-hostroot
	# virtio-gpu blob resources map guest memory on the host: it must be
	# shareable (memfd). hostmem is the window venus maps host-visible memory into.
	mem=${SYNCBRIDGE_VM_MEM:-2G}
	gpu_args=(-device virtio-gpu-gl-pci,blob=true,hostmem=1G,venus=true -display sdl,gl=on
		-object "memory-backend-memfd,id=sbmem,size=$mem,share=on" -machine memory-backend=sbmem)
	# Under TCG (the nested case) llvmpipe's JIT for the SDL-GL display crashes
	# with -cpu max's CPU features (facts: 2026-12-05); SSE4.1 code is enough.
	[ "${SYNCBRIDGE_VM_GUEST:-0}" != 1 ] || export GALLIUM_OVERRIDE_CPU_CAPS=${GALLIUM_OVERRIDE_CPU_CAPS:-sse4.1}
	;;
*) die "SYNCBRIDGE_VM_GPU: plain, virgl or venus, not '$gpu'" ;;
esac
for c in cpio gzip modinfo flock sha256sum; do
	command -v "$c" >/dev/null || die "'$c' not found; run scripts/setup.sh"
done
busybox=
for b in /bin/busybox /usr/bin/busybox; do [ -x "$b" ] && { busybox=$b; break; }; done
[ -n "$busybox" ] || die "busybox not found; run scripts/setup.sh (it installs busybox-static)"

[ -d "$kdir/boot" ] || die "no guest kernel in $kdir; run scripts/setup.sh (or point SYNCBRIDGE_KERNEL_DIR / meson -Dguest_kernel_dir at an unpacked kernel package)"
vmlinuz=$(ls -1 "$kdir"/boot/vmlinuz-* 2>/dev/null | sort -V | tail -n1 || true)
[ -n "$vmlinuz" ] || die "no boot/vmlinuz-* in $kdir; run scripts/setup.sh"
kver=${vmlinuz##*/vmlinuz-}
moddir=$kdir/lib/modules/$kver
[ -d "$moddir" ] || die "no lib/modules/$kver in $kdir; run scripts/setup.sh"

# --- initramfs (cached) ------------------------------------------------------
# shellcheck disable=SC2206
modules=("${base_modules[@]}" ${SYNCBRIDGE_VM_MODULES:-})
key=$( {
	printf '%s\n' "$kver" "$(cd "$kdir" && pwd -P)" "${modules[@]}"
	cat "$guest_dir"/init "$guest_dir"/*.sh
	sha256sum "$busybox"
	# The recipe below is part of the key too.
	sed -n '/^# --- initramfs/,/^# --- end initramfs/p' "${BASH_SOURCE[0]}"
} | sha256sum | cut -c1-16)
initramfs=$cache/initramfs-$kver-$key.cpio

build_initramfs() {
	local stage=$1 m f n name
	declare -A file=() loaded=()
	local order=()
	# Index the kernel package's modules by normalised name (- and _ are equal).
	while IFS= read -r f; do
		name=${f##*/}
		name=${name%%.ko*}
		file[${name//-/_}]=$f
	done < <(find "$moddir" -name '*.ko' -o -name '*.ko.xz' -o -name '*.ko.zst' -o -name '*.ko.gz')
	add_module() {
		local n=${1//-/_} d
		[ -z "${loaded[$n]:-}" ] || return 0
		loaded[$n]=1
		if [ -z "${file[$n]:-}" ]; then
			# Built into this kernel: nothing to load.
			grep -qE "/${n//_/[-_]}\.ko\$" "$moddir/modules.builtin" 2>/dev/null && return 0
			die "kernel module '$1' is neither in $moddir nor built in"
		fi
		for d in $(modinfo -F depends "${file[$n]}" | tr ',' ' '); do add_module "$d"; done
		order+=("$n")
	}
	for m in "${modules[@]}"; do add_module "$m"; done

	mkdir -p "$stage"/{bin,dev,proc,sys,tmp,etc,sb,lib/modules}
	cp "$busybox" "$stage/bin/busybox"
	# Every applet's link in /bin, made here: `busybox --install -s /bin` in
	# the guest's init took ~10 s of the nested venus guest's boot (TCG in TCG).
	while IFS= read -r a; do
		[ "$a" = busybox ] || ln -s busybox "$stage/bin/$a"
	done < <("$busybox" --list)
	for n in "${order[@]}"; do
		f=${file[$n]}
		case $f in
		*.ko.xz) xz -dc "$f" ;;
		*.ko.zst) zstd -qdc "$f" ;;
		*.ko.gz) gzip -dc "$f" ;;
		*) cat "$f" ;;
		esac >"$stage/lib/modules/$n.ko"
		echo "$n" >>"$stage/etc/sb-modules"
	done
	cp "$guest_dir/init" "$stage/init"
	cp "$guest_dir"/*.sh "$stage/sb/"
	chmod 755 "$stage/init" "$stage/bin/busybox" "$stage"/sb/*.sh
	(cd "$stage" && find . -mindepth 1 -print0 | LC_ALL=C sort -z |
		cpio -o -0 -H newc -R 0:0 --quiet) >"$stage.cpio"
	# Not compressed: unpacking 2 MB of gzip took ~5 s of the nested guest's
	# boot; the 6 MB image is only copied.
}
# --- end initramfs

if [ ! -s "$initramfs" ]; then
	mkdir -p "$cache"
	exec 9>"$cache/.initramfs.lock"
	flock 9
	if [ ! -s "$initramfs" ]; then
		say "building the guest initramfs for $kver (cached as ${initramfs##*/})"
		ldd "$busybox" >/dev/null 2>&1 && die "$busybox is not statically linked; install busybox-static"
		stage=$(mktemp -d "$cache/.initramfs-stage.XXXXXX")
		( build_initramfs "$stage" ) || { rm -rf "$stage" "$stage.cpio"; exit 125; }
		mv "$stage.cpio" "$initramfs"
		rm -rf "$stage"
		# Images of other script versions: drop them once they are an hour old
		# (another checkout may still be booting one right now).
		find "$cache" -maxdepth 1 -name "initramfs-*.cpio*" ! -name "${initramfs##*/}" -mmin +60 -delete
	fi
	exec 9>&-
fi

# --- kernel image ----------------------------------------------------------------
# A bzImage decompresses itself, which takes ~1.5 s under TCG. The ELF vmlinux
# inside it boots directly (PVH entry point), so keep a decompressed copy.
extract_vmlinux() { # BZIMAGE OUT
	local magic dec off
	for f in '\x28\xb5\x2f\xfd zstd' '\xfd\x37\x7a\x58\x5a\x00 xz' '\x1f\x8b\x08 gzip'; do
		magic=${f% *} dec=${f#* }
		command -v "$dec" >/dev/null || continue
		for off in $(LC_ALL=C grep -obUaP "$magic" "$1" 2>/dev/null | cut -d: -f1 | head -n 5); do
			tail -c +$((off + 1)) "$1" | "$dec" -dc >"$2" 2>/dev/null || true
			[ "$(head -c 4 "$2" | od -An -tx1 | tr -d ' \n')" = 7f454c46 ] && return 0
		done
	done
	rm -f "$2"
	return 1
}
boot_image=$vmlinuz
kconfig=$kdir/boot/config-$kver
if [ "${SYNCBRIDGE_VM_PVH:-1}" != 0 ] && [ -f "$kconfig" ] && grep -q '^CONFIG_PVH=y' "$kconfig"; then
	elf=$cache/vmlinux-$kver-$(stat -Lc '%s-%Y' "$vmlinuz")
	if [ ! -s "$elf" ]; then
		mkdir -p "$cache"
		exec 9>"$cache/.initramfs.lock"
		flock 9
		if [ ! -s "$elf" ] && extract_vmlinux "$vmlinuz" "$elf.tmp.$$"; then
			mv "$elf.tmp.$$" "$elf"
			find "$cache" -maxdepth 1 -name "vmlinux-*" ! -name "${elf##*/}" -mmin +60 -delete
		fi
		exec 9>&-
	fi
	[ -s "$elf" ] && boot_image=$elf
fi

# --- job folder ---------------------------------------------------------------
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sb-vm-run.XXXXXX")
qpid=
xpid=
relays=()
cleanup() {
	[ -n "$qpid" ] && kill "$qpid" 2>/dev/null
	[ -n "$xpid" ] && kill "$xpid" 2>/dev/null
	unblock_relays
	rm -rf "$tmp"
}
# A relay still waiting in open() for a writer (QEMU never opened its FIFO)
# returns once a writer has come and gone; opening read-write never blocks.
unblock_relays() {
	local f fd
	for f in "$tmp"/out.fifo "$tmp"/err.fifo; do
		[ -p "$f" ] || continue
		exec {fd}<>"$f"
		exec {fd}>&-
	done
	[ ${#relays[@]} -eq 0 ] || wait "${relays[@]}" 2>/dev/null || true
	relays=()
}
trap cleanup EXIT
trap 'say "interrupted"; exit 130' INT
trap 'say "terminated"; exit 143' TERM

# virgl: QEMU's SDL window (never looked at) needs an X server with GL; the
# host's GL is Mesa's llvmpipe. -displayfd picks a free display number.
if [ "$gpu" != plain ]; then
	stamp "starting Xvfb"
	Xvfb -displayfd 9 -screen 0 1024x768x24 -nolisten tcp 9>"$tmp/xdisplay" >"$tmp/xvfb.log" 2>&1 &
	xpid=$!
	for _ in $(seq 1 100); do
		[ -s "$tmp/xdisplay" ] && break
		kill -0 "$xpid" 2>/dev/null || break
		sleep 0.1
	done
	[ -s "$tmp/xdisplay" ] || die "Xvfb did not start: $(tail -n 3 "$tmp/xvfb.log" 2>/dev/null)"
	stamp "Xvfb up"
	export DISPLAY=:$(head -n 1 "$tmp/xdisplay")
	unset WAYLAND_DISPLAY
fi

if [ -n "$results" ]; then
	mkdir -p "$results" || die "cannot create $results"
else
	results=$tmp/results
	mkdir -p "$results"
fi
results=$(cd "$results" && pwd -P)
ctl=$results/.vm
rm -rf "$ctl" "$results/guest-info" "$results/batch.done"
mkdir -p "$ctl"
echo "$mode" >"$ctl/mode"
printf '%s\n' "$results" >"$ctl/results_path"
cwd=$(pwd -P)
printf '%s\n' "$cwd" >"$ctl/cwd"

# POSIX sh single quoting.
q() { local s=${1//\'/\'\\\'\'}; printf "'%s'" "$s"; }

# Environment for the guest.
{
	for v in $(compgen -e); do
		[[ $v =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || continue
		case $v in
		PATH | HOME | LANG | LANGUAGE | LC_* | TERM | TZ | USER | LOGNAME | LD_LIBRARY_PATH | \
			*SAN_OPTIONS | MALLOC_PERTURB_ | MALLOC_CHECK_ | \
			SYNCBRIDGE_* | SB_* | VK_* | MESA* | LIBGL* | EGL* | GALLIUM* | LP_* | MESON*) ;;
		*) [[ " ${SYNCBRIDGE_VM_ENV:-} " == *" $v "* ]] || continue ;;
		esac
		printf 'export %s=%s\n' "$v" "$(q "${!v}")"
	done
	echo "export XDG_RUNTIME_DIR=/run/user/0"
	echo "export SYNCBRIDGE_VM_GUEST=1"
	echo "export SYNCBRIDGE_VM_RESULTS=$(q "$results")"
	if [ "$mode" = shell ] && size=$(stty size 2>/dev/null); then
		echo "stty rows ${size% *} cols ${size#* } 2>/dev/null"
	fi
} >"$ctl/env"

under_tmp() { case $1 in /tmp | /tmp/*) return 0 ;; *) return 1 ;; esac; }
tmpmode=${SYNCBRIDGE_VM_TMP:-}
if [ -z "$tmpmode" ]; then
	tmpmode=tmpfs
	under_tmp "$cwd" && tmpmode=host
fi

names=()
if [ "$mode" = batch ]; then
	declare -A seen=()
	sum=0
	lineno=0
	while IFS= read -r line || [ -n "$line" ]; do
		lineno=$((lineno + 1))
		line=${line%$'\r'}
		[[ -z ${line//[$' \t']/} || $line == \#* ]] && continue
		IFS=$'\t' read -r -a f <<<"$line"
		[ ${#f[@]} -ge 3 ] || die "$listfile:$lineno: want NAME<TAB>TIMEOUT_S<TAB>COMMAND..."
		[[ ${f[0]} =~ ^[A-Za-z0-9][A-Za-z0-9._+-]*$ ]] || die "$listfile:$lineno: bad test name '${f[0]}'"
		verb=t
		if [[ ${f[1]} == *:alone ]]; then verb=a; f[1]=${f[1]%:alone}; fi
		if [[ ${f[1]} == *:onecpu ]]; then verb=o; f[1]=${f[1]%:onecpu}; fi
		[[ ${f[1]} =~ ^[0-9]+$ ]] || die "$listfile:$lineno: bad timeout '${f[1]}'"
		[ -z "${seen[${f[0]}]:-}" ] || die "$listfile:$lineno: test '${f[0]}' listed twice"
		seen[${f[0]}]=1
		names+=("${f[0]}")
		sum=$((sum + f[1] + 5))
		out=$verb
		for w in "${f[@]}"; do out+=" $(q "$w")"; under_tmp "$w" && [ -z "${SYNCBRIDGE_VM_TMP:-}" ] && tmpmode=host; done
		printf '%s\n' "$out" >>"$ctl/batch"
		rm -f "$results/${f[0]}".{log,rc,dmesg}
	done <"$listfile"
	[ ${#names[@]} -gt 0 ] || die "$listfile lists no tests"
	# + 120 s for the boot, + 300 s for one timed-out program's stacks (its
	# gdb, and in the nested venus guest its host side's).
	: "${timeout_s:=$((sum + 420))}"
else
	out="set --"
	for w in "${cmd[@]}"; do out+=" $(q "$w")"; done
	printf '%s\n' "$out" >"$ctl/cmd"
	under_tmp "${cmd[0]}" && [ -z "${SYNCBRIDGE_VM_TMP:-}" ] && tmpmode=host
	# Interactive sessions have no limit unless asked for.
	[ "$mode" = shell ] && : "${timeout_s:=0}"
	: "${timeout_s:=600}"
fi
echo "$tmpmode" >"$ctl/tmp"

# --- boot ----------------------------------------------------------------------
# No fbdev emulation, so no framebuffer console on virtio-gpu: its cursor
# blinks five times a second, and with a GL display (virgl, venus) each blink
# is a redraw of QEMU's SDL window by llvmpipe. Under TCG inside TCG that ate
# the venus guest: its boot and one device probe took 666 s with the console
# and 297 s without (2026-12-06). The tests read the console on ttyS0 only.
# (MODULE.PARAM words reach a module through the guest's init, as modprobe's.)
qargs=(-nodefaults -accel "${SYNCBRIDGE_VM_ACCEL:-tcg}" -cpu max -m "${SYNCBRIDGE_VM_MEM:-2G}" -smp "${SYNCBRIDGE_VM_CPUS:-2}"
	-no-reboot -vga none -nic none "${gpu_args[@]}"
	-device isa-debug-exit,iobase=0xf4,iosize=0x04
	-kernel "$boot_image" -initrd "$initramfs"
	-append "console=ttyS0 quiet loglevel=3 panic=-1 rdinit=/init pci=noacpi cryptomgr.notests drm_kms_helper.fbdev_emulation=0 ${SYNCBRIDGE_VM_APPEND:-}"
	-virtfs "local,path=$hostroot_share,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap"
	-virtfs "local,path=$results,mount_tag=results,security_model=none,multidevs=remap")
if [ "$mode" = shell ]; then
	# The terminal is the guest console; Ctrl-A x quits QEMU, Ctrl-C goes to the guest.
	qargs+=(-chardev stdio,id=con,mux=on,signal=off -serial chardev:con -mon chardev=con,mode=readline)
else
	# The guest's console (ttyS0: its messages and the kernel's) goes to our
	# stderr through a FIFO; CMD's stdout and stderr travel on virtio-serial
	# ports (sb.stdout, sb.stderr: much faster than a UART under TCG, and no
	# tty in between) to FIFOs too. QEMU never touches our stdin/stdout/stderr
	# file descriptions (no O_NONBLOCK games).
	qargs+=(-chardev "file,id=con,path=$tmp/err.fifo" -serial chardev:con
		-device virtio-serial-pci,max_ports=3
		-chardev "file,id=out,path=$tmp/out.fifo" -device virtserialport,chardev=out,name=sb.stdout
		-chardev "file,id=err,path=$tmp/err.fifo,append=on" -device virtserialport,chardev=err,name=sb.stderr)
fi

# If our reader goes away (`vm-run.sh ... | head`), a relay keeps draining its
# FIFO: a full FIFO would stall the guest.
relay() { trap '' PIPE; cat "$1" 2>/dev/null || cat "$1" >/dev/null; }
# While QEMU runs: when the guest's batch.sh asks (a timed-out program in the
# nested venus guest), every thread's kernel stack of QEMU and the render
# server, into the job folder the guest reads. (gdb would need the Debian 13
# root's libraries in their mount namespace, and the root has no gdb.)
host_dump() {
	set +e +o pipefail
	while kill -0 "$1" 2>/dev/null; do
		if [ -e "$ctl/host-dump.req" ]; then
			rm -f "$ctl/host-dump.req"
			for p in $(pgrep -f 'qemu-system|virgl_render_server|Xvfb'); do
				echo "process $p: $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | cut -c1-160)"
				for t in /proc/"$p"/task/*; do
					echo "  task ${t##*/} $(cat "$t/comm" 2>/dev/null), state $(cut -d' ' -f3 "$t/stat" 2>/dev/null), in $(cat "$t/wchan" 2>/dev/null), syscall $(cut -d' ' -f1 "$t/syscall" 2>/dev/null)"
					sed 's/^/    /' "$t/stack" 2>/dev/null
				done
			done >"$ctl/host-dump.tmp" 2>&1
			mv -f "$ctl/host-dump.tmp" "$ctl/host-dump.txt"
		fi
		sleep 2
	done
}
boot() {
	qrc=0
	if [ "$mode" = shell ]; then
		"${qemu_wrap[@]}" "$qemu" "${qargs[@]}" || qrc=$?
		return
	fi
	rm -f "$tmp/out.fifo" "$tmp/err.fifo"
	mkfifo "$tmp/out.fifo" "$tmp/err.fifo"
	relay "$tmp/out.fifo" &
	relays+=($!)
	relay "$tmp/err.fifo" >&2 &
	relays+=($!)
	if [ "$timeout_s" -gt 0 ]; then
		timeout --foreground -k 5 "$timeout_s" "${qemu_wrap[@]}" "$qemu" "${qargs[@]}" </dev/null &
	else
		"${qemu_wrap[@]}" "$qemu" "${qargs[@]}" </dev/null &
	fi
	qpid=$!
	dpid=
	if [ "${SYNCBRIDGE_VM_HOST_DUMP:-0}" = 1 ]; then
		host_dump "$qpid" &
		dpid=$!
	fi
	wait "$qpid" || qrc=$?
	[ -z "$dpid" ] || { kill "$dpid" 2>/dev/null; wait "$dpid" 2>/dev/null || true; }
	qpid=
	unblock_relays
}

t0=$(date +%s%N)
stamp "starting QEMU"
[ "$mode" = batch ] && say "booting the guest for ${#names[@]} tests (limit ${timeout_s}s)"
# A guest that dies before it has started the job (no guest-info yet: a kernel
# oops while booting, as TCG's multi-threaded mode can rarely cause) is booted
# again; nothing of the job has run then.
tries=${SYNCBRIDGE_VM_BOOT_TRIES:-2}
for ((try = 1; ; try++)); do
	boot
	if [ -f "$ctl/rc" ] || [ -f "$results/guest-info" ] || [ "$mode" = shell ] ||
		[ "$qrc" = 124 ] || [ "$qrc" = 137 ] || [ "$try" -ge "$tries" ]; then
		break
	fi
	say "the guest died while booting (QEMU exit status $qrc); booting it again"
done
el_ms=$((($(date +%s%N) - t0) / 1000000))
elapsed=$(printf '%d.%03d' $((el_ms / 1000)) $((el_ms % 1000)))

if [ ! -f "$ctl/rc" ]; then
	if [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
		why="QEMU was killed after the ${timeout_s}s time limit"
	elif [ "$qrc" != 0 ] && [ "$qrc" != 85 ]; then
		why="QEMU failed (exit status $qrc)"
	elif [ ! -f "$results/guest-info" ]; then
		why="the guest did not come up (see its messages above)"
	else
		why="the guest stopped before the command finished (crash or kernel panic?)"
	fi
	printf '%s: error: no exit status from the guest: %s (%ss)\n' "$me" "$why" "$elapsed" >&2
	exit 125
fi
rc=$(cat "$ctl/rc")
[[ $rc =~ ^[0-9]+$ ]] || die "bad exit status '$rc' from the guest"

if [ "$mode" = batch ]; then
	[ -f "$results/batch.done" ] || {
		printf '%s: error: the batch did not finish (runner exit status %s, %ss)\n' "$me" "$rc" "$elapsed" >&2
		exit 125
	}
	pass=0 fail=0 skip=0
	for n in "${names[@]}"; do
		r=$(cat "$results/$n.rc" 2>/dev/null || echo missing)
		case $r in 0) pass=$((pass + 1)) ;; 77) skip=$((skip + 1)) ;; *) fail=$((fail + 1)) ;; esac
	done
	say "batch done in ${elapsed}s: $pass passed, $fail failed, $skip skipped (results in $results)"
	exit 0
fi
exit "$rc"
}
