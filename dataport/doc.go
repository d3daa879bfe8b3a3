// Package dataport makes a segment or test port what a wire needs: a port
// that passes every frame unchanged and that nothing on it can reach the
// box through.
//
// Quiet takes the kernel's stack off a port (no addresses, IPv6 off, ARP
// neither answered nor announced, strict reverse-path filtering), so that
// even with no XDP program attached a neighbour gets no ARP reply, no
// neighbour advertisement and no TCP answer from the box. Init quiets every
// port but the management port at boot, before any daemon runs; forwarderd
// and the self-test quiet theirs again before they bring them up.
//
// Configure turns off what a NIC does to frames behind XDP's back (VLAN tag
// stripping and filtering, 802.3x flow control, a firmware LLDP agent) and
// reports what each driver did with each setting.
//
// The input fence that drops everything the stack would see on a port is
// in the subpackage fence, which needs BPF.
package dataport
