// Package boundary holds the test that keeps the two sides of ncpos
// apart. The appliance's programs (services/...) run on the box: they must
// not link the host's image builder, updater, VM runner or namespace lab,
// and only the programs that load BPF may link the BPF libraries. The host
// command (cmd/ncpos) builds, installs, updates and tests boxes: it must
// not link gokrazy's runtime (Boot, supervision) or the appliance's init.
// docs/DESIGN.md draws the map these rules protect.
package boundary
