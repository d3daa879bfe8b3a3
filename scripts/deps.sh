#!/usr/bin/env bash
# Installs the Debian packages ncpos needs on the host: the image tools,
# QEMU with SeaBIOS and OVMF, and what the tests use. Safe to run again.
set -euo pipefail
pkgs=(squashfs-tools dosfstools mtools syslinux syslinux-common systemd-boot-efi
      e2fsprogs fdisk qemu-system-x86 ovmf util-linux iproute2 ca-certificates prometheus chromium fonts-dejavu-core
      snmp snmptrapd smitools curl prometheus-alertmanager lldpd tshark tcpdump freeradius chrony radvd
      clang llvm libbpf-dev gcc libc6-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
command -v npm >/dev/null || missing+=(npm)
if ((${#missing[@]})); then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  echo "installing: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  # lldpd plays the tests' neighbours, in their namespaces: the host
  # itself stays silent on its own network.
  if [[ " ${missing[*]} " == *" lldpd "* ]] && [ -d /run/systemd/system ]; then
    $SUDO systemctl disable --now lldpd >/dev/null 2>&1 || true
  fi
  # FreeRADIUS answers the tests' logins with their own configuration on
  # loopback: Debian's own server is not wanted.
  if [[ " ${missing[*]} " == *" freeradius "* ]] && [ -d /run/systemd/system ]; then
    $SUDO systemctl disable --now freeradius >/dev/null 2>&1 || true
  fi
  # chrony serves the tests' boxes their time on loopback, never
  # steering the host's clock (chronyd -x): Debian's own is not wanted.
  if [[ " ${missing[*]} " == *" chrony "* ]] && [ -d /run/systemd/system ]; then
    $SUDO systemctl disable --now chrony >/dev/null 2>&1 || true
  fi
  # radvd advertises the tests' IPv6 prefixes in their namespaces only.
  if [[ " ${missing[*]} " == *" radvd "* ]] && [ -d /run/systemd/system ]; then
    $SUDO systemctl disable --now radvd >/dev/null 2>&1 || true
  fi
fi
command -v go >/dev/null || { echo "Go is missing: install Go 1.26 (https://go.dev/dl) and put it on PATH" >&2; exit 1; }

# QEMU 8 and later emulate the Intel 82576 ("igb"), whose driver is that of
# the 82576/82580 boxes and redirects natively; bookworm has QEMU 7.2, its
# backports QEMU 10. The backports suite is added from the Debian mirror
# the host already uses for bookworm. Where that fails, the igb tests say
# what they miss.
has_igb() { local h; h=$(qemu-system-x86_64 -device help 2>/dev/null || true); [[ $h == *'name "igb"'* ]]; }
has_bpo() { local p; p=$(apt-cache policy 2>/dev/null || true); [[ $p == *bookworm-backports* ]]; }
if ! has_igb; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  bpo=/etc/apt/sources.list.d/ncpos-bookworm-backports.sources
  if ! has_bpo; then
    # One stanza per paragraph: the URIs of a Debian stanza (signed by
    # Debian's archive key) whose Suites name bookworm.
    uri=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk 'BEGIN {RS=""}
      /(^|\n)Suites:([^\n]*[ \t])?bookworm([ \t]|\n|$)/ && /debian-archive-keyring/ && match($0, /(^|\n)URIs:[ \t]*[^ \t\n]+/) {
        u = substr($0, RSTART, RLENGTH); sub(/^\n?URIs:[ \t]*/, "", u); print u; exit }' || true)
    [ -n "$uri" ] || uri=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
      awk '$1 == "deb" { i = 2; if ($i ~ /^\[/) while (i <= NF && $i !~ /\]$/) i++; if ($i ~ /\]$/) i++; if ($(i+1) == "bookworm" && $i ~ /debian\/?$/) { print $i; exit } }' || true)
    if [ -n "$uri" ]; then
      printf 'Types: deb\nURIs: %s\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' "$uri" |
        $SUDO tee "$bpo" >/dev/null
    fi
  fi
  if has_bpo || [ -f "$bpo" ]; then
    echo "installing QEMU from bookworm-backports"
    if ! { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
        -t bookworm-backports qemu-system-x86 qemu-system-common qemu-system-data seabios >/dev/null; }; then
      echo "warning: QEMU from bookworm-backports could not be installed" >&2
      $SUDO rm -f "$bpo"
    fi
  fi
  has_igb || echo "warning: this QEMU has no igb device: the igb tests will say so" >&2
fi

# The IETF MIBs that NCPOS-MIB imports, for smilint and the net-snmp tools
# (Debian ships them only in non-free): the copies in the net-snmp npm
# package, fetched by npm from the registry the host is set up for and
# checked against their hash.
mibs="${XDG_CACHE_HOME:-$HOME/.cache}/ncpos/mibs"
if [ ! -f "$mibs/SNMPv2-SMI.txt" ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && npm pack --silent net-snmp@3.29.2 >/dev/null)
  echo "a89a7a7e29638b5353aa246563821172754ff1980bfc4b5dbd09dc1b217c6f04  $tmp/net-snmp-3.29.2.tgz" | sha256sum -c --quiet
  tar xzf "$tmp/net-snmp-3.29.2.tgz" -C "$tmp" package/lib/mibs
  mkdir -p "$mibs.new"
  for f in "$tmp"/package/lib/mibs/*.mib; do cp "$f" "$mibs.new/$(basename "$f" .mib).txt"; done
  rm -rf "$mibs" && mv "$mibs.new" "$mibs"
fi

# The Go tools the test script runs, at pinned versions, from the Go module
# proxy: staticcheck, and gotestsum to rerun a failed boot test once.
bin="${XDG_CACHE_HOME:-$HOME/.cache}/ncpos/bin"
want="staticcheck@v0.8.2 gotestsum@v1.13.0"
if [ "$(cat "$bin/.versions" 2>/dev/null)" != "$want" ]; then
  GOBIN="$bin" go install honnef.co/go/tools/cmd/staticcheck@v0.8.2
  GOBIN="$bin" go install gotest.tools/gotestsum@v1.13.0
  echo "$want" > "$bin/.versions"
fi
