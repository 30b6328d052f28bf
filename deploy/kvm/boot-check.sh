#!/usr/bin/env bash
# Boot a Proxyfleet proxy image under plain QEMU and prove that cloud-init
# configured it: Squid with basic auth answers on 3128 and the guest agent
# answers on its virtio-serial port.
#
#   deploy/kvm/boot-check.sh [options] IMAGE.qcow2
#
# The image is never written: the VM runs on a qcow2 overlay. The guest's
# network is QEMU user networking with restrict=on (DHCP works, the guest
# reaches nothing outside) and one host forward 127.0.0.1:PORT -> guest:3128.
# Every proxied request the check makes targets the guest itself.
set -euo pipefail

PROG=${0##*/}
HERE=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
TIMEOUT=${BOOT_TIMEOUT:-900}
PORT=${PORT:-}
ACCEL=${ACCEL:-tcg}
FIRMWARE=${FIRMWARE:-uefi}
SEED_BUS=${SEED_BUS:-sata}
MEMORY=${MEMORY:-1024}
DISK_SIZE=${DISK_SIZE:-}
OVMF_CODE=${OVMF_CODE:-/usr/share/OVMF/OVMF_CODE_4M.fd}
OVMF_VARS=${OVMF_VARS:-/usr/share/OVMF/OVMF_VARS_4M.fd}
WORK_PARENT=${WORK_PARENT:-/var/tmp}
KEEP=0
GUEST_NET_RESTRICT=on
PROXY_USER=pfcheck

usage() {
  cat <<EOF
Usage: $PROG [options] IMAGE.qcow2

Boot IMAGE (on an overlay) with a NoCloud seed that configures Squid with basic
auth, then wait until the guest agent answers and Squid authenticates.

Options (environment variable in brackets):
  --timeout SECS     give up after SECS [BOOT_TIMEOUT] (default: $TIMEOUT)
  --port PORT        host port forwarded to the guest's 3128 [PORT] (default: a free one)
  --accel tcg|kvm    QEMU accelerator [ACCEL] (default: $ACCEL)
  --firmware uefi|bios  OVMF or SeaBIOS [FIRMWARE] (default: $FIRMWARE)
  --seed-bus sata|virtio-scsi|virtio-blk
                     how the seed ISO is attached [SEED_BUS] (default: $SEED_BUS,
                     like the libvirt provider's <target bus='sata'/> CD-ROM)
  --memory MIB       guest memory [MEMORY] (default: $MEMORY)
  --disk-size SIZE   make the overlay larger than the image, e.g. 4G, to check
                     that cloud-init grows the root fs [DISK_SIZE] (default: same)
  --work-parent DIR  where the work dir is made [WORK_PARENT] (default: $WORK_PARENT)
  --keep             keep the work dir (overlay, seed, serial.log)
  -h, --help         this help
EOF
}

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { printf '%s: error: %s\n' "$PROG" "$*" >&2; exit 1; }

IMAGE=
while [[ $# -gt 0 ]]; do
  case $1 in
    --timeout) TIMEOUT=${2:?}; shift 2 ;;
    --port) PORT=${2:?}; shift 2 ;;
    --accel) ACCEL=${2:?}; shift 2 ;;
    --firmware) FIRMWARE=${2:?}; shift 2 ;;
    --seed-bus) SEED_BUS=${2:?}; shift 2 ;;
    --memory) MEMORY=${2:?}; shift 2 ;;
    --disk-size) DISK_SIZE=${2:?}; shift 2 ;;
    --work-parent) WORK_PARENT=${2:?}; shift 2 ;;
    --keep) KEEP=1; shift ;;
    -h|--help) usage; exit 0 ;;
    -*) usage >&2; die "unknown option: $1" ;;
    *) [[ -z $IMAGE ]] || die "only one IMAGE may be given"; IMAGE=$1; shift ;;
  esac
done
[[ -n $IMAGE ]] || { usage >&2; die "missing IMAGE.qcow2"; }
[[ -f $IMAGE ]] || die "no such image: $IMAGE"
IMAGE=$(cd -- "$(dirname -- "$IMAGE")" && pwd)/$(basename -- "$IMAGE")
[[ $TIMEOUT =~ ^[0-9]+$ ]] || die "--timeout must be a number of seconds"
case $ACCEL in tcg|kvm) ;; *) die "--accel must be tcg or kvm" ;; esac
case $FIRMWARE in uefi|bios) ;; *) die "--firmware must be uefi or bios" ;; esac
case $SEED_BUS in sata|virtio-scsi|virtio-blk) ;; *) die "bad --seed-bus: $SEED_BUS" ;; esac

for c in qemu-system-x86_64 qemu-img curl python3; do
  command -v "$c" >/dev/null || die "missing tool: $c"
done
if [[ $FIRMWARE == uefi ]]; then
  [[ -r $OVMF_CODE && -r $OVMF_VARS ]] || die "OVMF not found ($OVMF_CODE, $OVMF_VARS): apt-get install ovmf"
fi
# Python with pycdlib/bcrypt, used when genisoimage/xorriso/htpasswd are absent.
VENV_PY=$HERE/../../.venv/bin/python
[[ -x $VENV_PY ]] || VENV_PY=

WORK=$(mktemp -d "$WORK_PARENT/pf-boot-check.XXXXXX")
QEMU_PID=
cleanup() {
  local rc=$?
  if [[ -n $QEMU_PID ]] && kill -0 "$QEMU_PID" 2>/dev/null; then
    kill "$QEMU_PID" 2>/dev/null || true
    for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$QEMU_PID" 2>/dev/null || break; sleep 0.5; done
    kill -9 "$QEMU_PID" 2>/dev/null || true
    wait "$QEMU_PID" 2>/dev/null || true
  fi
  if ((KEEP)) || ((rc != 0)); then
    log "work dir kept: $WORK (serial log: $WORK/serial.log)"
  else
    rm -rf -- "$WORK"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- seed -------------------------------------------------------------------
PROXY_PASS=$(python3 -c 'import secrets; print(secrets.token_urlsafe(12))')
if command -v htpasswd >/dev/null; then
  HTLINE=$(htpasswd -nbB -C 10 "$PROXY_USER" "$PROXY_PASS" | head -n1)
elif python3 -c 'import bcrypt' 2>/dev/null; then
  HTLINE=$(python3 -c 'import bcrypt,sys; print(sys.argv[1]+":"+bcrypt.hashpw(sys.argv[2].encode(), bcrypt.gensalt(10)).decode())' "$PROXY_USER" "$PROXY_PASS")
elif [[ -n $VENV_PY ]] && "$VENV_PY" -c 'import bcrypt' 2>/dev/null; then
  HTLINE=$("$VENV_PY" -c 'import bcrypt,sys; print(sys.argv[1]+":"+bcrypt.hashpw(sys.argv[2].encode(), bcrypt.gensalt(10)).decode())' "$PROXY_USER" "$PROXY_PASS")
else
  die "need htpasswd (apache2-utils) or python bcrypt to hash the proxy password"
fi

INSTANCE_ID=pf-boot-check-$(date +%s)
mkdir -p "$WORK/seed"
cat >"$WORK/seed/meta-data" <<EOF
instance-id: $INSTANCE_ID
local-hostname: pf-boot-check
EOF
cat >"$WORK/seed/user-data" <<EOF
#cloud-config
write_files:
  - path: /etc/squid/passwd
    owner: root:proxy
    permissions: '0640'
    content: |
      $HTLINE
  - path: /etc/squid/squid.conf
    permissions: '0644'
    content: |
      # Written by cloud-init (proxyfleet boot-check).
      http_port 3128
      visible_hostname pf-boot-check
      auth_param basic program /usr/lib/squid/basic_ncsa_auth /etc/squid/passwd
      auth_param basic children 2
      auth_param basic realm proxyfleet
      acl authed proxy_auth REQUIRED
      http_access deny !authed
      http_access allow authed
      http_access deny all
      cache deny all
      access_log stdio:/var/log/squid/access.log
runcmd:
  - [systemctl, enable, --now, qemu-guest-agent]
  - [systemctl, restart, squid]
EOF

make_iso() {
  local out=$1 dir=$2
  if command -v genisoimage >/dev/null; then
    genisoimage -quiet -output "$out" -volid CIDATA -joliet -rock "$dir/user-data" "$dir/meta-data"
  elif command -v xorriso >/dev/null; then
    xorriso -as mkisofs -quiet -output "$out" -volid CIDATA -joliet -rock "$dir/user-data" "$dir/meta-data"
  elif [[ -n $VENV_PY ]] && "$VENV_PY" -c 'import pycdlib' 2>/dev/null; then
    "$VENV_PY" - "$out" "$dir" <<'PY'
import sys, pycdlib
out, d = sys.argv[1], sys.argv[2]
iso = pycdlib.PyCdlib()
iso.new(interchange_level=3, joliet=3, rock_ridge="1.09", vol_ident="CIDATA")
for name in ("user-data", "meta-data"):
    data = open(f"{d}/{name}", "rb").read()
    iso.add_fp(__import__("io").BytesIO(data), len(data), "/" + name.upper().replace("-", "_") + ".;1",
               rr_name=name, joliet_path="/" + name)
iso.write(out)
iso.close()
PY
  else
    die "need genisoimage, xorriso or pycdlib to make the seed ISO"
  fi
}
make_iso "$WORK/seed.iso" "$WORK/seed"

# --- disk, firmware, port ---------------------------------------------------
qemu-img create -q -f qcow2 -F qcow2 -b "$IMAGE" "$WORK/overlay.qcow2" ${DISK_SIZE:+"$DISK_SIZE"}
if [[ -z $PORT ]]; then
  PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
fi

qemu=(qemu-system-x86_64 -name pf-boot-check -machine "q35,accel=$ACCEL" -m "$MEMORY" -smp 1
      -nodefaults -no-user-config -display none -serial "file:$WORK/serial.log")
if [[ $FIRMWARE == uefi ]]; then
  cp -- "$OVMF_VARS" "$WORK/OVMF_VARS.fd"
  qemu+=(-drive "if=pflash,format=raw,readonly=on,file=$OVMF_CODE"
         -drive "if=pflash,format=raw,file=$WORK/OVMF_VARS.fd")
fi
qemu+=(-drive "file=$WORK/overlay.qcow2,format=qcow2,if=virtio")
case $SEED_BUS in
  sata) qemu+=(-drive "file=$WORK/seed.iso,format=raw,media=cdrom,if=none,id=seed,readonly=on"
               -device ide-cd,drive=seed,bus=ide.0) ;;   # q35's ICH9 AHCI port 0
  virtio-scsi) qemu+=(-device virtio-scsi-pci,id=scsi0
                      -drive "file=$WORK/seed.iso,format=raw,media=cdrom,if=none,id=seed,readonly=on"
                      -device scsi-cd,drive=seed,bus=scsi0.0) ;;
  virtio-blk) qemu+=(-drive "file=$WORK/seed.iso,format=raw,if=virtio,readonly=on") ;;
esac
qemu+=(-netdev "user,id=n0,restrict=$GUEST_NET_RESTRICT,hostfwd=tcp:127.0.0.1:$PORT-:3128"
       -device virtio-net-pci,netdev=n0
       -chardev "socket,path=$WORK/qga.sock,server=on,wait=off,id=qga0"
       -device virtio-serial -device virtserialport,chardev=qga0,name=org.qemu.guest_agent.0)

log "image:    $IMAGE"
log "work dir: $WORK"
log "booting: accel=$ACCEL firmware=$FIRMWARE seed=$SEED_BUS mem=${MEMORY}M port=$PORT timeout=${TIMEOUT}s"
printf '%q ' "${qemu[@]}" >"$WORK/qemu.cmd"; echo >>"$WORK/qemu.cmd"
T0=$EPOCHREALTIME
"${qemu[@]}" >"$WORK/qemu.out" 2>&1 &
QEMU_PID=$!
log "qemu pid $QEMU_PID"

# --- wait ---------------------------------------------------------------------
elapsed() { python3 -c "import sys; print(f'{float(sys.argv[1]) - float(sys.argv[2]):.1f}')" "$EPOCHREALTIME" "$T0"; }
declare -A SEEN=()
MARKS=(
  "firmware (OVMF)|BdsDxe"
  "grub|Welcome to GRUB|Booting .Debian"
  "kernel|Linux version"
  "systemd|systemd\\[1\\]: |Welcome to .*Debian"
  "cloud-init local|running 'init-local'"
  "login prompt|login: "
  "cloud-init final|Cloud-init v\\. .* finished at"
)
scan_serial() {
  local m name pat
  serial_text >"$WORK/serial.txt" || true
  for m in "${MARKS[@]}"; do
    name=${m%%|*}; pat=${m#*|}
    [[ -n ${SEEN[$name]:-} ]] && continue
    if grep -qE "$pat" "$WORK/serial.txt"; then
      SEEN[$name]=$(elapsed); log "serial: $name after ${SEEN[$name]}s"
    fi
  done
}
# The serial log without terminal escapes (GRUB draws its menu with them).
serial_text() {
  [[ -f $WORK/serial.log ]] || return 0
  sed -e 's/\x1b\[[0-9;?=]*[A-Za-z]//g' "$WORK/serial.log" | tr -cd '\11\12\40-\176'
}
curl_proxy() { env -u no_proxy -u NO_PROXY -u http_proxy -u https_proxy -u all_proxy curl -s --max-time 15 "$@"; }

T_AGENT=; T_SQUID=
deadline=$((SECONDS + TIMEOUT))
while :; do
  kill -0 "$QEMU_PID" 2>/dev/null || {
    cat "$WORK/qemu.out" >&2; serial_text | tail -n 40 >&2 || true
    die "qemu exited early"
  }
  scan_serial
  if [[ -z $T_AGENT ]] && [[ -S $WORK/qga.sock ]] && QGA_TIMEOUT=2 python3 "$HERE/qga.py" "$WORK/qga.sock" ping 2>/dev/null; then
    T_AGENT=$(elapsed); log "guest agent answered after ${T_AGENT}s"
  fi
  if [[ -z $T_SQUID ]]; then
    code=$(curl_proxy -o /dev/null -w '%{http_code}' -x "http://127.0.0.1:$PORT" http://127.0.0.1:9/ || true)
    if [[ $code == 407 ]]; then T_SQUID=$(elapsed); log "squid answered (407 without credentials) after ${T_SQUID}s"; fi
  fi
  [[ -n $T_AGENT && -n $T_SQUID ]] && break
  if ((SECONDS >= deadline)); then
    log "timeout after ${TIMEOUT}s (agent: ${T_AGENT:-no}, squid: ${T_SQUID:-no}); last serial output:"
    serial_text | tail -n 40 >&2 || true
    exit 1
  fi
  sleep 2
done
scan_serial

# --- checks -------------------------------------------------------------------
FAIL=0
check() { # NAME GOT WANT
  if [[ $2 == "$3" ]]; then log "PASS  $1: $2"; else log "FAIL  $1: got '$2', want '$3'"; FAIL=1; fi
}
P=http://127.0.0.1:$PORT
check "no credentials -> 407" \
  "$(curl_proxy -o /dev/null -w '%{http_code}' -x "$P" http://127.0.0.1:9/ || true)" 407
check "wrong password -> 407" \
  "$(curl_proxy -o /dev/null -w '%{http_code}' -x "$P" -U "$PROXY_USER:wrong" http://127.0.0.1:9/ || true)" 407
check "authenticated GET to a closed guest port -> 503 from squid" \
  "$(curl_proxy -o /dev/null -w '%{http_code}' -x "$P" -U "$PROXY_USER:$PROXY_PASS" http://127.0.0.1:9/ || true)" 503
check "authenticated CONNECT to a closed guest port -> 503" \
  "$(curl_proxy -o /dev/null -w '%{http_connect}' -p -x "$P" -U "$PROXY_USER:$PROXY_PASS" http://127.0.0.1:9/ || true)" 503
check "authenticated CONNECT to the guest's 3128 -> 200 tunnel" \
  "$(curl_proxy -o /dev/null -w '%{http_connect}' -p -x "$P" -U "$PROXY_USER:$PROXY_PASS" http://127.0.0.1:3128/ || true)" 200
server=$(curl_proxy -D - -o /dev/null -x "$P" -U "$PROXY_USER:$PROXY_PASS" http://127.0.0.1:9/ | tr -d '\r' | awk -F': ' 'tolower($1)=="server"{print $2}' || true)
check "Server header" "${server%%/*}" squid

if ifaces=$(python3 "$HERE/qga.py" "$WORK/qga.sock" cmd '{"execute":"guest-network-get-interfaces"}'); then
  addrs=$(python3 -c 'import json,sys; print(" ".join("%s=%s" % (i["name"], a["ip-address"]) for i in json.load(sys.stdin) for a in i.get("ip-addresses", []) if a["ip-address-type"] == "ipv4"))' <<<"$ifaces" || true)
  log "PASS  guest-network-get-interfaces: $addrs"
else
  log "FAIL  guest-network-get-interfaces"; FAIL=1
fi
# Extra evidence from inside the guest (guest-exec; not fatal if disabled).
log "cloud-init status (via guest-exec):"
python3 "$HERE/qga.py" "$WORK/qga.sock" exec /usr/bin/cloud-init status --long 2>&1 | sed 's/^/    /' >&2 || true
python3 "$HERE/qga.py" "$WORK/qga.sock" exec /bin/sh -c \
  'uname -r; systemctl is-active squid qemu-guest-agent; systemctl is-enabled squid; findmnt -no SOURCE,FSTYPE,SIZE /; ls /dev/disk/by-label; cat /etc/network/interfaces.d/* 2>/dev/null | grep -v "^#"; cloud-init schema --system 2>&1 | tail -n 15' \
  2>&1 | sed 's/^/    /' >&2 || true
serial_text >"$WORK/serial.txt"
log "cloud-init lines in the serial log:"
grep -iE "cloud-init|ci-info" "$WORK/serial.txt" | head -n 60 | sed 's/^/    /' >&2 || true

# --- report -------------------------------------------------------------------
echo "boot-check: accel=$ACCEL firmware=$FIRMWARE seed=$SEED_BUS"
for m in "${MARKS[@]}"; do
  name=${m%%|*}
  if [[ -n ${SEEN[$name]:-} ]]; then printf '  %-18s %s s\n' "$name:" "${SEEN[$name]}"
  else printf '  %-18s %s\n' "$name:" "not seen"; fi
done
printf '  %-18s %s s\n' "guest agent:" "$T_AGENT" "squid ready:" "$T_SQUID"
log "stopping qemu (pid $QEMU_PID)"
kill "$QEMU_PID"; wait "$QEMU_PID" 2>/dev/null || true; QEMU_PID=
if ((FAIL)); then echo "RESULT: FAIL"; exit 1; fi
echo "RESULT: PASS"
