#!/bin/busybox sh
# Prints what this guest has, for the host: first a one-line summary, then
# key=value lines. Runs in the initramfs (before the chroot), as root.
#   vm: guest kernel 6.12.95+deb12-amd64, vgem present, udmabuf present, virtio_gpu present
#   kernel=6.12.95+deb12-amd64
#   card0=vgem
#   card1=virtio_gpu
#   renderD128=vgem
#   ...
#   udmabuf=present|absent
#   dma_heap_system=present|absent

kernel=$(uname -r)
drivers=
nodes=
for c in /sys/class/drm/card* /sys/class/drm/renderD*; do
	[ -e "$c/dev" ] || continue # connectors (card0-Virtual-1) have no dev
	n=${c##*/}
	d=
	# Most drivers: the driver bound to the device. virtio_gpu: the driver
	# of the virtio device under the virtio-pci device. vgem: a bare
	# platform device named "vgem" with no driver bound.
	v=$(ls -d "$c"/device/virtio*/driver 2>/dev/null | head -n1)
	if [ -n "$v" ]; then
		d=$(basename "$(readlink "$v")")
	elif [ -e "$c/device/driver" ]; then
		d=$(basename "$(readlink "$c/device/driver")")
	elif [ -e "$c/device" ]; then
		d=$(basename "$(readlink -f "$c/device")")
		d=${d%%.*}
	fi
	nodes="$nodes$n=${d:-unknown}
"
	case " $drivers " in *" $d "*) ;; *) drivers="$drivers $d" ;; esac
done

have() { case " $drivers " in *" $1 "*) echo present ;; *) echo absent ;; esac; }
udmabuf=absent
[ -c /dev/udmabuf ] && udmabuf=present
heap=absent
[ -c /dev/dma_heap/system ] && heap=present

echo "vm: guest kernel $kernel, vgem $(have vgem), udmabuf $udmabuf, virtio_gpu $(have virtio_gpu), dma_heap/system $heap"
echo "kernel=$kernel"
printf '%s' "$nodes"
echo "udmabuf=$udmabuf"
echo "dma_heap_system=$heap"
echo "cpus=$(nproc)"
echo "mem_kb=$(awk '/^MemTotal:/{print $2}' /proc/meminfo)"
