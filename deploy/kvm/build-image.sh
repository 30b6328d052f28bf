#!/usr/bin/env bash
# Build a bootable Debian 12 (bookworm) qcow2 base image for Proxyfleet proxy VMs.
#
#   sudo deploy/kvm/build-image.sh [options] OUT.qcow2
#
# The image: GPT disk with a BIOS boot partition, an EFI system partition
# (FAT, GRUB at the removable-media path EFI/BOOT/BOOTX64.EFI, so no NVRAM
# entry is needed) and an ext4 root (label pf-root, last partition so
# cloud-init's growpart can grow it). It boots under UEFI (OVMF; the target)
# and legacy BIOS (SeaBIOS), with the console on ttyS0. Inside: the Debian
# kernel (generic by default, see --kernel), systemd, cloud-init (datasources NoCloud, None; ENI/ifupdown +
# dhclient for networking), squid (installed but disabled at boot: the proxy's
# user-data writes its config and restarts it), qemu-guest-agent.
#
# No loop devices and no image mounts: the root filesystem is made from a
# directory with `mkfs.ext4 -d`, the ESP with mkfs.vfat + mtools, the
# partition table with sfdisk on a plain file, and the partitions are placed
# with dd. (debootstrap and the chroot install mount proc/sysfs in the
# build root, which is all that is mounted, and is undone on exit.)
set -euo pipefail

PROG=${0##*/}
SUITE=bookworm
MIRROR=${MIRROR:-http://deb.debian.org/debian}
SECURITY_MIRROR=${SECURITY_MIRROR-http://deb.debian.org/debian-security}
IMAGE_MIRROR=${IMAGE_MIRROR:-http://deb.debian.org/debian}
IMAGE_SECURITY_MIRROR=${IMAGE_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
DISK_SIZE=${DISK_SIZE:-2G}
CACHE_DIR=${CACHE_DIR:-}
WORK_PARENT=${WORK_PARENT:-/var/tmp}
KEEP_WORK=0
ROOT_LABEL=pf-root
ESP_LABEL=PF-ESP
ESP_MIB=64
KERNEL=${KERNEL:-generic}

PACKAGES=(
  initramfs-tools e2fsprogs
  systemd-sysv udev dbus
  cloud-init cloud-guest-utils
  ifupdown isc-dhcp-client iproute2 netbase
  squid qemu-guest-agent
  ca-certificates procps less
)

usage() {
  cat <<EOF
Usage: $PROG [options] OUT.qcow2

Build a bootable Debian 12 (bookworm) qcow2 image for Proxyfleet proxy VMs.
Must run as root (debootstrap, chroot).

Options (each also settable by the environment variable in brackets):
  --mirror URL           Debian mirror used for the build, e.g. an apt-cacher-ng
                         proxy URL [MIRROR] (default: $MIRROR)
  --security-mirror URL  debian-security mirror used for the build; empty to
                         skip security updates [SECURITY_MIRROR]
                         (default: $SECURITY_MIRROR)
  --image-mirror URL     mirror written to the image's sources.list
                         [IMAGE_MIRROR] (default: $IMAGE_MIRROR)
  --disk-size SIZE       virtual disk size, e.g. 2G [DISK_SIZE] (default: $DISK_SIZE)
  --kernel generic|cloud
                         kernel flavour [KERNEL] (default: $KERNEL). cloud
                         (linux-image-cloud-amd64) makes a smaller image
                         (~166 vs ~265 MiB) but has no AHCI driver: on q35 it cannot see a SATA
                         CD-ROM, so the seed must be attached by virtio
                         (virtio-scsi CD-ROM or virtio disk). generic
                         (linux-image-amd64) works with a SATA CD-ROM.
  --cache-dir DIR        keep downloaded .debs here between builds [CACHE_DIR]
                         (default: none)
  --work-parent DIR      where the temporary work dir is made [WORK_PARENT]
                         (default: $WORK_PARENT)
  --keep-work            do not delete the work dir (for debugging)
  -h, --help             this help
EOF
}

log() { printf '[%s] %s: %s\n' "$(date +%H:%M:%S)" "$PROG" "$*" >&2; }
die() { printf '%s: error: %s\n' "$PROG" "$*" >&2; exit 1; }

OUT=
while [[ $# -gt 0 ]]; do
  case $1 in
    --mirror) MIRROR=${2:?--mirror needs a URL}; shift 2 ;;
    --mirror=*) MIRROR=${1#*=}; shift ;;
    --security-mirror) SECURITY_MIRROR=${2?}; shift 2 ;;
    --security-mirror=*) SECURITY_MIRROR=${1#*=}; shift ;;
    --image-mirror) IMAGE_MIRROR=${2:?}; shift 2 ;;
    --image-mirror=*) IMAGE_MIRROR=${1#*=}; shift ;;
    --disk-size) DISK_SIZE=${2:?}; shift 2 ;;
    --disk-size=*) DISK_SIZE=${1#*=}; shift ;;
    --kernel) KERNEL=${2:?}; shift 2 ;;
    --kernel=*) KERNEL=${1#*=}; shift ;;
    --cache-dir) CACHE_DIR=${2:?}; shift 2 ;;
    --cache-dir=*) CACHE_DIR=${1#*=}; shift ;;
    --work-parent) WORK_PARENT=${2:?}; shift 2 ;;
    --work-parent=*) WORK_PARENT=${1#*=}; shift ;;
    --keep-work) KEEP_WORK=1; shift ;;
    -h|--help) usage; exit 0 ;;
    -*) usage >&2; die "unknown option: $1" ;;
    *) [[ -z $OUT ]] || die "only one OUT.qcow2 may be given"; OUT=$1; shift ;;
  esac
done
[[ -n $OUT ]] || { usage >&2; die "missing OUT.qcow2"; }
case $KERNEL in
  generic) PACKAGES+=(linux-image-amd64) ;;
  cloud) PACKAGES+=(linux-image-cloud-amd64) ;;
  *) die "--kernel must be generic or cloud" ;;
esac
[[ $(id -u) -eq 0 ]] || die "must run as root (debootstrap and chroot need it)"

need=(debootstrap chroot mkfs.ext4 mkfs.vfat mmd mcopy sfdisk grub-mkstandalone grub-mkimage
      qemu-img dd truncate sha256sum numfmt)
missing=()
for c in "${need[@]}"; do command -v "$c" >/dev/null || missing+=("$c"); done
[[ -d /usr/lib/grub/x86_64-efi ]] || missing+=("grub-efi-amd64-bin")
[[ -d /usr/lib/grub/i386-pc ]] || missing+=("grub-pc-bin")
if ((${#missing[@]})); then
  die "missing tools: ${missing[*]}
  install: apt-get install --no-install-recommends debootstrap qemu-utils e2fsprogs \\
           dosfstools mtools fdisk grub-efi-amd64-bin grub-pc-bin coreutils"
fi

OUT_DIR=$(dirname -- "$OUT")
[[ -d $OUT_DIR ]] || die "output directory does not exist: $OUT_DIR"
OUT=$(cd -- "$OUT_DIR" && pwd)/$(basename -- "$OUT")
DISK_BYTES=$(numfmt --from=iec "$DISK_SIZE") || die "bad --disk-size: $DISK_SIZE"

mkdir -p -- "$WORK_PARENT"
WORK=$(mktemp -d "$WORK_PARENT/pf-image-build.XXXXXX")
ROOT=$WORK/root
MOUNTED=()

cleanup() {
  local rc=$?
  local m
  for ((i=${#MOUNTED[@]}-1; i>=0; i--)); do
    m=${MOUNTED[i]}
    mountpoint -q "$m" 2>/dev/null && { umount "$m" || umount -l "$m" || true; }
  done
  # debootstrap may leave its own proc/sys mounts behind on failure.
  for m in "$ROOT/proc" "$ROOT/sys" "$ROOT/dev/pts"; do
    mountpoint -q "$m" 2>/dev/null && { umount "$m" || umount -l "$m" || true; }
  done
  if ((KEEP_WORK)); then
    log "work dir kept: $WORK"
  elif [[ -d $WORK ]]; then
    # Refuse to recurse into anything still mounted.
    if grep -q " $WORK/" /proc/mounts; then
      log "WARNING: something is still mounted under $WORK; not deleting it"
    else
      rm -rf --one-file-system -- "$WORK"
    fi
  fi
  ((rc == 0)) || log "FAILED (exit $rc)"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

in_root() { LC_ALL=C.UTF-8 DEBIAN_FRONTEND=noninteractive chroot "$ROOT" "$@"; }
mount_pseudo() {
  mount -t proc proc "$ROOT/proc" && MOUNTED+=("$ROOT/proc")
  mount -t sysfs sysfs "$ROOT/sys" && MOUNTED+=("$ROOT/sys")
}
umount_pseudo() {
  local m
  for m in "$ROOT/sys" "$ROOT/proc"; do mountpoint -q "$m" && umount "$m"; done
  MOUNTED=()
}

t_start=$SECONDS
log "work dir: $WORK"
log "mirror: $MIRROR${SECURITY_MIRROR:+ (security: $SECURITY_MIRROR)}"

# --- 1. debootstrap ---------------------------------------------------------
ds_args=(--variant=minbase --components=main --include=ca-certificates)
if [[ -n $CACHE_DIR ]]; then
  mkdir -p -- "$CACHE_DIR"
  CACHE_DIR=$(cd -- "$CACHE_DIR" && pwd)
  ds_args+=(--cache-dir="$CACHE_DIR")
fi
log "debootstrap $SUITE (minbase)..."
t0=$SECONDS
debootstrap "${ds_args[@]}" "$SUITE" "$ROOT" "$MIRROR" >"$WORK/debootstrap.log" 2>&1 || {
  tail -n 30 "$WORK/debootstrap.log" >&2
  die "debootstrap failed (full log in $WORK/debootstrap.log; use --keep-work to keep it)"
}
T_DEBOOTSTRAP=$((SECONDS - t0))
log "debootstrap done in ${T_DEBOOTSTRAP}s"

# --- 2. packages ------------------------------------------------------------
# Keep docs, man pages and translations out of the image (copyright files stay).
cat >"$ROOT/etc/dpkg/dpkg.cfg.d/01-proxyfleet-nodoc" <<'EOF'
path-exclude=/usr/share/doc/*
path-include=/usr/share/doc/*/copyright
path-exclude=/usr/share/man/*
path-exclude=/usr/share/info/*
path-exclude=/usr/share/locale/*
path-include=/usr/share/locale/locale.alias
path-exclude=/usr/share/lintian/*
path-exclude=/usr/share/linda/*
EOF
cat >"$ROOT/etc/apt/apt.conf.d/01-proxyfleet" <<'EOF'
APT::Install-Recommends "false";
APT::Install-Suggests "false";
Acquire::Languages "none";
EOF
# No daemons may start inside the build chroot.
cat >"$ROOT/usr/sbin/policy-rc.d" <<'EOF'
#!/bin/sh
exit 101
EOF
chmod 0755 "$ROOT/usr/sbin/policy-rc.d"

{
  echo "deb $MIRROR $SUITE main"
  echo "deb $MIRROR $SUITE-updates main"
  [[ -z $SECURITY_MIRROR ]] || echo "deb $SECURITY_MIRROR $SUITE-security main"
} >"$ROOT/etc/apt/sources.list"
# fstab before the kernel: initramfs-tools reads it (root fs type => fsck in the initramfs).
cat >"$ROOT/etc/fstab" <<EOF
# <file system>    <mount point>  <type>  <options>                  <dump> <pass>
LABEL=$ROOT_LABEL  /              ext4    defaults,errors=remount-ro  0      1
# The ESP is not needed at run time (no boot loader updates happen in the VM).
LABEL=$ESP_LABEL   /boot/efi      vfat    umask=0077,noauto,nofail   0      2
EOF
mkdir -p "$ROOT/boot/efi"
# Kernel postinst makes /vmlinuz and /initrd.img symlinks; GRUB boots those.
printf 'do_symlinks = yes\nlink_in_boot = no\n' >"$ROOT/etc/kernel-img.conf"
# Predictable first hostname; cloud-init replaces it.
echo localhost >"$ROOT/etc/hostname"
echo LANG=C.UTF-8 >"$ROOT/etc/default/locale"

if [[ -n $CACHE_DIR ]]; then
  find "$CACHE_DIR" -maxdepth 1 -name '*.deb' -exec cp -n -t "$ROOT/var/cache/apt/archives/" {} +
fi
log "installing packages: ${PACKAGES[*]}"
t0=$SECONDS
mount_pseudo
{
  in_root apt-get update
  in_root apt-get -y -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold dist-upgrade
  in_root apt-get -y -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
    install "${PACKAGES[@]}"
} >"$WORK/apt.log" 2>&1 || {
  tail -n 40 "$WORK/apt.log" >&2
  die "package installation failed (full log in $WORK/apt.log; use --keep-work to keep it)"
}
T_PACKAGES=$((SECONDS - t0))
log "packages installed in ${T_PACKAGES}s"
if [[ -n $CACHE_DIR ]]; then
  find "$ROOT/var/cache/apt/archives" -maxdepth 1 -name '*.deb' -exec cp -n -t "$CACHE_DIR/" {} +
fi

KVER=$(in_root linux-version list | sort -V | tail -n1)
[[ -n $KVER ]] || die "no kernel installed in the image"
log "kernel: $KVER"
for mod in virtio_blk virtio_net virtio_scsi virtio_console ahci sr_mod isofs ext4 vfat; do
  grep -qE "/$mod\.ko" "$ROOT/lib/modules/$KVER/modules.dep" "$ROOT/lib/modules/$KVER/modules.builtin" ||
    log "WARNING: kernel module $mod not found in $KVER"
done

# --- 3. configuration -------------------------------------------------------
log "configuring the image..."

cat >"$ROOT/etc/network/interfaces" <<'EOF'
# Interfaces are configured by cloud-init (ENI renderer) in interfaces.d/.
source /etc/network/interfaces.d/*

auto lo
iface lo inet loopback
EOF
mkdir -p "$ROOT/etc/network/interfaces.d"

cat >"$ROOT/etc/cloud/cloud.cfg.d/99-proxyfleet.cfg" <<'EOF'
# Proxyfleet: proxies are configured from a NoCloud seed (ISO labelled CIDATA).
datasource_list: [ NoCloud, None ]
datasource:
  NoCloud:
    fs_label: cidata
# Render networking with ifupdown (ENI); dhclient runs on the NIC.
system_info:
  network:
    renderers: [ 'eni', 'networkd' ]
# No locales package: C.UTF-8 is built into glibc and needs no generation.
locale: C.UTF-8
EOF
# No SSH in the image: drop cloud-init's SSH modules (host keys, key import,
# fingerprints), keeping the rest of this cloud-init version's module lists.
in_root python3 - >"$ROOT/etc/cloud/cloud.cfg.d/98-proxyfleet-modules.cfg" <<'PY'
import yaml
cfg = yaml.safe_load(open("/etc/cloud/cloud.cfg"))
drop = {"ssh", "ssh_import_id", "ssh_authkey_fingerprints", "keys_to_console"}
def name(m):
    return (m if isinstance(m, str) else m[0]).replace("-", "_")
out = {k: [m for m in cfg[k] if name(m) not in drop]
       for k in ("cloud_init_modules", "cloud_config_modules", "cloud_final_modules")}
print("# Proxyfleet: cloud-init module lists without the SSH modules.")
print(yaml.safe_dump(out, default_flow_style=False, sort_keys=False), end="")
PY
grep -q '^ *- ssh$' "$ROOT/etc/cloud/cloud.cfg.d/98-proxyfleet-modules.cfg" && die "ssh module still listed"

cat >"$ROOT/etc/apt/sources.list" <<EOF
deb $IMAGE_MIRROR $SUITE main
deb $IMAGE_MIRROR $SUITE-updates main
deb $IMAGE_SECURITY_MIRROR $SUITE-security main
EOF

# squid starts only when cloud-init has written its config (runcmd restarts it).
in_root systemctl disable squid.service >/dev/null 2>&1 || true
in_root systemctl is-enabled squid.service >/dev/null 2>&1 && die "could not disable squid.service"
# Serial console getty (also implied by console=ttyS0 on the kernel cmdline).
in_root systemctl enable serial-getty@ttyS0.service >/dev/null 2>&1 || true
# Nothing waits for an interface that never comes.
in_root systemctl mask systemd-networkd-wait-online.service >/dev/null 2>&1 || true

# GRUB config on the root fs: both loaders read it, so the kernel command
# line can be changed inside a VM without rebuilding the loaders.
KCMDLINE="root=LABEL=$ROOT_LABEL ro console=tty0 console=ttyS0,115200n8"
mkdir -p "$ROOT/boot/grub"
cat >"$ROOT/boot/grub/grub.cfg" <<EOF
# Proxyfleet image: written by build-image.sh, not by update-grub.
serial --unit=0 --speed=115200
terminal_input serial console
terminal_output serial console
set timeout_style=countdown
set timeout=1
set default=0
menuentry 'Debian GNU/Linux 12 (Proxyfleet proxy)' {
  insmod gzio
  insmod part_gpt
  insmod ext2
  search --no-floppy --label $ROOT_LABEL --set=root
  linux /vmlinuz $KCMDLINE
  initrd /initrd.img
}
EOF
[[ -e $ROOT/vmlinuz && -e $ROOT/initrd.img ]] || {
  ln -sf "boot/vmlinuz-$KVER" "$ROOT/vmlinuz"
  ln -sf "boot/initrd.img-$KVER" "$ROOT/initrd.img"
}
[[ -f $ROOT/boot/initrd.img-$KVER ]] || die "no initramfs for $KVER"

# --- 4. clean up the tree ---------------------------------------------------
log "cleaning caches and per-instance state..."
in_root apt-get clean
umount_pseudo
rm -f "$ROOT/usr/sbin/policy-rc.d"
rm -rf "$ROOT"/var/lib/apt/lists/* "$ROOT"/var/cache/apt/*.bin \
       "$ROOT"/var/cache/debconf/*-old "$ROOT"/var/lib/dpkg/*-old \
       "$ROOT"/var/lib/cloud/* "$ROOT"/var/log/cloud-init*.log \
       "$ROOT"/tmp/* "$ROOT"/var/tmp/* "$ROOT"/root/.bash_history
find "$ROOT/var/log" -type f \( -name '*.log' -o -name '*.gz' -o -name '*.[0-9]' \) -delete
: >"$ROOT/var/log/lastlog" 2>/dev/null || true
# Every VM gets its own machine-id (empty file => generated on first boot).
: >"$ROOT/etc/machine-id"
rm -f "$ROOT/var/lib/dbus/machine-id" "$ROOT/var/lib/systemd/random-seed"
ln -sf /etc/machine-id "$ROOT/var/lib/dbus/machine-id"
rm -f "$ROOT"/var/lib/dhcp/*.leases "$ROOT"/etc/ssh/ssh_host_*

# --- 5. loaders -------------------------------------------------------------
log "building GRUB loaders..."
# Early config: find the root fs by label and read its /boot/grub/grub.cfg.
# The prefix stays where the modules are (the EFI image's memdisk; for BIOS
# they are all inside core.img).
cat >"$WORK/early.cfg" <<EOF
search --no-floppy --label $ROOT_LABEL --set=root
configfile (\$root)/boot/grub/grub.cfg
EOF
GRUB_MODS="part_gpt part_msdos fat ext2 search search_label search_fs_uuid normal configfile"
GRUB_MODS+=" linux echo test serial terminal gzio boot all_video"
# UEFI: a standalone image whose memdisk holds the modules and the early config.
grub-mkstandalone -O x86_64-efi -o "$WORK/BOOTX64.EFI" \
  --install-modules="$GRUB_MODS" --modules="$GRUB_MODS" \
  --locales= --fonts= --themes= \
  "boot/grub/grub.cfg=$WORK/early.cfg"
# BIOS (nice-to-have): core.img in the BIOS boot partition with the early config embedded.
grub-mkimage -O i386-pc -o "$WORK/core.img" -p /boot/grub -c "$WORK/early.cfg" \
  biosdisk $GRUB_MODS

# --- 6. filesystems and disk ------------------------------------------------
SECTOR=512
BIOS_START=2048; BIOS_SECTORS=2048                 # 1 MiB BIOS boot partition
ESP_START=4096; ESP_SECTORS=$((ESP_MIB * 2048))
ROOT_START=$((ESP_START + ESP_SECTORS))
GPT_BACKUP_SECTORS=34
DISK_SECTORS=$((DISK_BYTES / SECTOR))
ROOT_SECTORS=$(( (DISK_SECTORS - GPT_BACKUP_SECTORS - ROOT_START) / 2048 * 2048 ))
((ROOT_SECTORS > 0)) || die "--disk-size $DISK_SIZE is too small"
USED_KIB=$(du -sx --block-size=1K "$ROOT" | cut -f1)
((ROOT_SECTORS * SECTOR / 1024 > USED_KIB * 13 / 10)) || \
  die "--disk-size $DISK_SIZE is too small for a root of $((USED_KIB / 1024)) MiB"
log "root tree: $((USED_KIB / 1024)) MiB; disk: $DISK_SIZE"

log "making the ESP (FAT)..."
truncate -s $((ESP_SECTORS * SECTOR)) "$WORK/esp.img"
mkfs.vfat -F 32 -S $SECTOR -s 1 -n "$ESP_LABEL" "$WORK/esp.img" >/dev/null
export MTOOLS_SKIP_CHECK=1
mmd -i "$WORK/esp.img" ::/EFI ::/EFI/BOOT
mcopy -i "$WORK/esp.img" "$WORK/BOOTX64.EFI" ::/EFI/BOOT/BOOTX64.EFI

log "making the root filesystem (ext4 from the tree)..."
truncate -s $((ROOT_SECTORS * SECTOR)) "$WORK/root.img"
mkfs.ext4 -q -F -L "$ROOT_LABEL" -d "$ROOT" -m 1 -E lazy_itable_init=0,lazy_journal_init=0 \
  "$WORK/root.img"
e2fsck -fn "$WORK/root.img" >"$WORK/e2fsck.log" 2>&1 || { cat "$WORK/e2fsck.log" >&2; die "fsck of the new root filesystem failed"; }

log "partitioning and assembling the disk..."
truncate -s "$DISK_BYTES" "$WORK/disk.raw"
sfdisk --quiet --no-reread --no-tell-kernel "$WORK/disk.raw" <<EOF
label: gpt
first-lba: 2048
start=$BIOS_START, size=$BIOS_SECTORS, type=21686148-6E6F-744E-6565-644E65654546, name="bios"
start=$ESP_START, size=$ESP_SECTORS, type=C12A7328-F81F-11D2-BA4B-00A0C93EC93B, name="esp"
start=$ROOT_START, size=$ROOT_SECTORS, type=4F68BCE3-E8CD-4DB1-96E7-FBCAF984B709, name="root"
EOF
dd if="$WORK/esp.img" of="$WORK/disk.raw" bs=1M seek=$((ESP_START * SECTOR / 1048576)) \
  conv=notrunc,sparse status=none
dd if="$WORK/root.img" of="$WORK/disk.raw" bs=1M seek=$((ROOT_START * SECTOR / 1048576)) \
  conv=notrunc,sparse status=none
rm -f "$WORK/esp.img" "$WORK/root.img"

# BIOS boot (nice-to-have), done by hand like grub-bios-setup (which lives in
# grub-pc, a package that would take over the build host's boot loader):
# core.img goes into the BIOS boot partition with its first sector's
# blocklist pointing at the rest; boot.img's code goes into the MBR (keeping
# the protective MBR's partition table) and points at core.img.
put_le() { # FILE OFFSET NBYTES VALUE: write VALUE little-endian
  local i hex=
  for ((i = 0; i < $3; i++)); do hex+=$(printf '\\x%02x' $((($4 >> (8 * i)) & 255))); done
  printf "$hex" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}
CORE_SECTORS=$((($(stat -c %s "$WORK/core.img") + SECTOR - 1) / SECTOR))
BIOS_OK=0
if ((CORE_SECTORS <= BIOS_SECTORS)); then
  put_le "$WORK/core.img" $((0x1f4)) 8 $((BIOS_START + 1))   # blocklist start
  put_le "$WORK/core.img" $((0x1fc)) 2 $((CORE_SECTORS - 1))  # blocklist length
  dd if="$WORK/core.img" of="$WORK/disk.raw" bs=$SECTOR seek=$BIOS_START conv=notrunc status=none
  dd if=/usr/lib/grub/i386-pc/boot.img of="$WORK/disk.raw" bs=1 count=$((0x1b8)) conv=notrunc status=none
  put_le "$WORK/disk.raw" $((0x5c)) 8 $BIOS_START              # kernel (core.img) sector
  put_le "$WORK/disk.raw" $((0x64)) 1 $((0xff))                # boot drive: as passed in DL
  put_le "$WORK/disk.raw" $((0x66)) 2 $((0x9090))              # hard disk: no floppy probe
  BIOS_OK=1
else
  log "WARNING: core.img ($CORE_SECTORS sectors) does not fit the BIOS boot partition; UEFI only"
fi

# --- 7. qcow2 -----------------------------------------------------------------
log "converting to compressed qcow2..."
t0=$SECONDS
TMP_OUT="$OUT.tmp.$$"
qemu-img convert -c -O qcow2 -o compat=1.1,cluster_size=65536 "$WORK/disk.raw" "$TMP_OUT"
mv -f -- "$TMP_OUT" "$OUT"
T_CONVERT=$((SECONDS - t0))

SIZE=$(stat -c %s "$OUT")
SHA=$(sha256sum -- "$OUT" | cut -d' ' -f1)
log "done in $((SECONDS - t_start))s (debootstrap ${T_DEBOOTSTRAP}s, packages ${T_PACKAGES}s, qcow2 ${T_CONVERT}s)"
echo "image:   $OUT"
echo "kernel:  $KVER"
echo "boot:    UEFI (EFI/BOOT/BOOTX64.EFI)$( ((BIOS_OK)) && echo ', BIOS (GRUB in BIOS boot partition)')"
echo "virtual: $DISK_SIZE (root fs LABEL=$ROOT_LABEL, partition 3, growable)"
echo "size:    $SIZE bytes ($(numfmt --to=iec-i --suffix=B "$SIZE"))"
echo "sha256:  $SHA"
