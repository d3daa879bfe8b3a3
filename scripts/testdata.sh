#!/usr/bin/env bash
# Makes the tests' fixtures anew with real tools, as root, in two network
# namespaces joined by a veth (ncpt-td-a sends, ncpt-td-b captures):
#
#   lldp/testdata/lldpd.pcapng       Debian's lldpd announcing itself, then
#                                    stopping (its shutdown LLDPDU), as
#                                    dumpcap captured it
#   lldp/testdata/lldpd.tshark       what tshark reads in each of its frames
#   pcapfilter/testdata/traffic.*    traffic of the kernel's own stacks (ARP,
#                                    neighbour discovery, TCP and UDP over
#                                    IPv4 and IPv6) and a few frames sent
#                                    raw (an ICMP echo, a frame under VLAN
#                                    42 and one under 42 then 7), as dumpcap
#                                    captured it, and what tcpdump keeps of
#                                    it for each of a list of filters
#   pcapng/testdata/dumpcap.*        the same capture, and what tshark reads
#                                    of each frame
#
# The tests compare what ncpos reads with what those tools read, and that
# the tools still read what the fixtures say. Run it from anywhere; it
# needs iproute2, lldpd, wireshark's dumpcap and tshark, tcpdump and
# python3 (Debian's packages).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
tmp=$(mktemp -d)
chmod 755 "$tmp" # lldpd gives up root, and reaches its socket still
cleanup() {
  [ -z "${lldpd:-}" ] || kill -KILL "$lldpd" 2>/dev/null || true
  ip netns del ncpt-td-a 2>/dev/null || true
  ip netns del ncpt-td-b 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
a() { ip netns exec ncpt-td-a "$@"; }
b() { ip netns exec ncpt-td-b "$@"; }

ip netns add ncpt-td-a
ip netns add ncpt-td-b
ip link add ncpt-tda netns ncpt-td-a type veth peer name ncpt-tdb netns ncpt-td-b
a ip link set ncpt-tda up
b ip link set ncpt-tdb up
a ip addr add 192.0.2.1/24 dev ncpt-tda
a ip -6 addr add 2001:db8::1/64 dev ncpt-tda nodad
b ip addr add 192.0.2.2/24 dev ncpt-tdb
b ip -6 addr add 2001:db8::2/64 dev ncpt-tdb nodad
sleep 1

# capture SECONDS FILE [FILTER]: dumpcap on ncpt-tdb, in the background.
capture() {
  local args=(-q -i ncpt-tdb -a "duration:$1" -w "$2")
  [ -n "${3:-}" ] && args+=(-f "$3")
  b dumpcap "${args[@]}" 2>/dev/null &
  sleep 1.5
}

# lldpd: one LLDPDU at start, the shutdown LLDPDU as it stops.
mkdir -m 755 "$tmp/lldpd"
cat >"$tmp/lldpd/lldpd.conf" <<'EOF'
configure system hostname sw-core-1
configure system description "Debian lldpd, ncpos test fixture"
configure lldp portidsubtype ifname
configure ports ncpt-tda lldp portdescription "uplink to fw1"
EOF
capture 5 "$tmp/lldpd.pcapng" "ether proto 0x88cc"
# ip netns exec execs lldpd: $! is lldpd itself.
ip netns exec ncpt-td-a lldpd -d -O "$tmp/lldpd/lldpd.conf" -u "$tmp/lldpd/lldpd.socket" -I ncpt-tda >/dev/null 2>&1 &
lldpd=$!
sleep 2.5
kill -TERM "$lldpd"
wait
cp "$tmp/lldpd.pcapng" lldp/testdata/lldpd.pcapng
{
  echo "# tshark -T fields of lldpd.pcapng: chassis subtype, chassis ID, port subtype, port ID, TTL, port description, system name, system description, management IPv4, management IPv6"
  tshark -r lldp/testdata/lldpd.pcapng -T fields -E separator=/t -E aggregator="|" \
    -e lldp.chassis.subtype -e lldp.chassis.id.mac -e lldp.port.subtype -e lldp.port.id -e lldp.time_to_live \
    -e lldp.port.desc -e lldp.tlv.system.name -e lldp.tlv.system.desc -e lldp.mgn.addr.ip4 -e lldp.mgn.addr.ip6 2>/dev/null
} >lldp/testdata/lldpd.tshark

# Traffic: the stacks' own, and raw frames the kernel would not send.
src=$(a cat /sys/class/net/ncpt-tda/address)
dst=$(b cat /sys/class/net/ncpt-tdb/address)
capture 5 "$tmp/traffic.pcapng"
a python3 - "$src" "$dst" <<'EOF'
import socket, struct, sys
src, dst = (bytes.fromhex(m.replace(":", "")) for m in sys.argv[1:3])
def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    s = (s >> 16) + (s & 0xFFFF)
    s += s >> 16
    return ~s & 0xFFFF
def ip4(proto, sip, dip, payload):
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), 1, 0, 64, proto, 0, socket.inet_aton(sip), socket.inet_aton(dip))
    return h[:10] + struct.pack("!H", csum(h)) + h[12:] + payload
def tag(vid):
    return b"\x81\x00" + struct.pack("!H", vid)
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind(("ncpt-tda", 0))
echo = struct.pack("!BBHHH", 8, 0, 0, 0x1234, 1) + b"ncpos"
echo = echo[:2] + struct.pack("!H", csum(echo)) + echo[4:]
s.send(dst + src + b"\x08\x00" + ip4(1, "192.0.2.1", "192.0.2.2", echo))
udp = struct.pack("!HHHH", 5060, 5060, 8 + 6, 0) + b"INVITE"
s.send(dst + src + tag(42) + b"\x08\x00" + ip4(17, "198.51.100.1", "198.51.100.2", udp))
syn = struct.pack("!HHIIBBHHH", 40000, 22, 1, 0, 0x50, 0x02, 1024, 0, 0)
s.send(dst + src + tag(42) + tag(7) + b"\x08\x00" + ip4(6, "198.51.100.1", "198.51.100.2", syn))
EOF
a bash -c 'echo hi > /dev/tcp/192.0.2.2/443' 2>/dev/null || true
a bash -c 'echo dns > /dev/udp/192.0.2.2/53'
a python3 -c '
import socket
s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
s.settimeout(1)
try:
    s.connect(("2001:db8::2", 8080))
except OSError:
    pass
'
wait
cp "$tmp/traffic.pcapng" pcapfilter/testdata/traffic.pcapng
cp "$tmp/traffic.pcapng" pcapng/testdata/dumpcap.pcapng
{
  echo "# tshark -T fields of dumpcap.pcapng: frame.time_epoch, frame.len, frame.cap_len, frame.interface_name"
  tshark -r pcapng/testdata/dumpcap.pcapng -T fields -E separator=/t \
    -e frame.time_epoch -e frame.len -e frame.cap_len -e frame.interface_name 2>/dev/null
} >pcapng/testdata/dumpcap.tshark

# What tcpdump keeps, by frame number: frames are told apart by their
# times.
f=pcapfilter/testdata/traffic.pcapng
mapfile -t all < <(tcpdump -r "$f" -n -tt 2>/dev/null | awk '{print $1}')
{
  echo "# what tcpdump (libpcap) keeps of traffic.pcapng: a filter, then the numbers of the frames it keeps (from 1)"
  for filter in "" "ip" "ip6" "icmp" "icmp6" "tcp" "udp" "tcp port 443" "ip6 and tcp" "udp port 53" \
    "host 192.0.2.2" "src host 192.0.2.2" "net 198.51.100.0/24" "vlan" "vlan 42" "vlan 42 and vlan 7" \
    "vlan 42 and udp port 5060" "vlan and tcp port 22" "not vlan and ip" "ether src $src" \
    "ip6 host 2001:db8::2 and tcp port 8080" "less 60" "greater 80" "portrange 5000-6000"; do
    nums=()
    while read -r ts; do
      for i in "${!all[@]}"; do
        [ "${all[$i]}" = "$ts" ] && nums+=("$((i + 1))")
      done
    done < <(tcpdump -r "$f" -n -tt "$filter" 2>/dev/null | awk '{print $1}')
    printf '%s\t%s\n' "$filter" "${nums[*]}"
  done
} >pcapfilter/testdata/traffic.tcpdump
echo "fixtures made under $root: lldp/testdata pcapfilter/testdata pcapng/testdata"
