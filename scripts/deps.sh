#!/usr/bin/env bash
# Installs the Debian packages ncpos needs on the host: the image tools,
# QEMU with SeaBIOS and OVMF, and what the tests use. Safe to run again.
set -euo pipefail
pkgs=(squashfs-tools dosfstools mtools syslinux syslinux-common systemd-boot-efi
      e2fsprogs fdisk qemu-system-x86 ovmf util-linux iproute2 ca-certificates prometheus chromium fonts-dejavu-core)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  echo "installing: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
command -v go >/dev/null || { echo "Go is missing: install Go 1.26 (https://go.dev/dl) and put it on PATH" >&2; exit 1; }
