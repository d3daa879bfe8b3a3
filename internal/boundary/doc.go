// Package boundary holds the test that keeps the two sides of ncpos
// apart. The appliance's programs (services/...) run on the box: they must
// not link the host's image builder, updater, VM runner or namespace lab,
// and only the programs that load BPF may link the BPF libraries. The host
// command (cmd/ncpos) builds, installs, updates and tests boxes: it must
// not link gokrazy's runtime (Boot, supervision), the appliance's init,
// statusd's server or the watchdog's petter; it reads statusd's API
// through its types (web/api) alone.
// docs/DESIGN.md draws the map these rules protect.
package boundary
