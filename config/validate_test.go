package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// seg is a valid segment appended after the lines under test, so that the
// lines a case checks are the first lines of its text.
const seg = "\n[[segment]]\nname = \"s\"\nports = [\"LAN1\", \"LAN2\"]\n"

// problems parses text as ncpos.toml and returns its problems, one string
// each, failing the test if the error is not a *ValidationError.
func problems(t *testing.T, text string) []string {
	t.Helper()
	_, err := Parse("ncpos.toml", []byte(text))
	if err == nil {
		return nil
	}
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("Parse error %T %v, want *ValidationError", err, err)
	}
	var out []string
	for _, fe := range ve.Errors {
		out = append(out, fe.Error())
	}
	return out
}

func TestValidationRules(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []string
	}{
		{"hostname", `hostname = "-bad"` + seg, []string{
			`ncpos.toml:1: hostname: "-bad" is not a valid hostname, want 1-63 letters, digits and "-", not starting or ending with "-"`}},
		{"platform", `platform = "nsp-9999"` + seg, []string{
			`ncpos.toml:1: platform: unknown platform "nsp-9999", want one of "fw-7565", "fw-8865", "generic", "iec-516p", "net-1715vd4n", "nsp-1096", "qemu" or "qemu-igb"`}},
		{"services unknown and duplicate", `services = ["statusd", "sshd", "statusd"]`, []string{
			`ncpos.toml:1: services[1]: unknown service "sshd", want one of "forwarderd", "bypassd", "watchdogd" or "statusd"`,
			`ncpos.toml:1: services[2]: duplicate service "statusd", already listed as services[0]`}},
		{"services multi-line", "services = [\n  \"bypassd\",\n  \"nope\",\n]" + seg, []string{
			`ncpos.toml:3: services[1]: unknown service "nope", want one of "forwarderd", "bypassd", "watchdogd" or "statusd"`}},
		{"no segment with forwarderd", "platform = \"qemu\"\nservices = [\"forwarderd\"]", []string{
			`ncpos.toml:1: segment: no segments, want at least one [[segment]] with two ports for forwarderd to bridge`}},
		{"no segment without forwarderd", `services = ["statusd"]`, nil},
		{"management port unknown", "[management]\nport = \"ETH0\"\n" + seg, []string{
			`ncpos.toml:2: management.port: unknown port "ETH0" (platform "qemu" has MGMT, LAN1, LAN2, LAN3, LAN4)`}},
		{"address with dhcp", "[management]\ndhcp = true\naddress = \"192.0.2.10/24\"\n" + seg, []string{
			`ncpos.toml:3: management.address: "192.0.2.10/24" is set but dhcp = true, want dhcp = false for a static address or no address`}},
		{"dhcp off without address", "[management]\ndhcp = false\n" + seg, []string{
			`ncpos.toml:1: management.address: missing, want a static address such as "192.0.2.10/24" when dhcp = false`}},
		{"address not CIDR", "[management]\naddress = \"192.0.2.10\"\n" + seg, []string{
			`ncpos.toml:2: management.address: "192.0.2.10" is not an address in CIDR form, want e.g. "192.0.2.10/24"`}},
		{"address unspecified", "[management]\naddress = \"0.0.0.0/0\"\n" + seg, []string{
			`ncpos.toml:2: management.address: "0.0.0.0/0" is not a usable host address, want e.g. "192.0.2.10/24"`}},
		{"gateway without address", "[management]\ngateway = \"192.0.2.1\"\n" + seg, []string{
			`ncpos.toml:2: management.gateway: "192.0.2.1" is set without a static address, want address (with dhcp = false) or no gateway`}},
		{"gateway not IP", "[management]\naddress = \"192.0.2.10/24\"\ngateway = \"router\"\n" + seg, []string{
			`ncpos.toml:3: management.gateway: "router" is not an IP address, want e.g. "192.0.2.1"`}},
		{"gateway off subnet", "[management]\naddress = \"192.0.2.10/24\"\ngateway = \"198.51.100.1\"\n" + seg, []string{
			`ncpos.toml:3: management.gateway: 198.51.100.1 is outside 192.0.2.10/24, want an address on the management subnet`}},
		{"gateway is self", "[management]\naddress = \"192.0.2.10/24\"\ngateway = \"192.0.2.10\"\n" + seg, []string{
			`ncpos.toml:3: management.gateway: 192.0.2.10 is the appliance's own address, want the router's address`}},
		{"status port", "[status]\nport = 0\n" + seg, []string{
			`ncpos.toml:2: status.port: 0 is out of range, want 1..65535`}},
		{"redirect on the HTTPS port", "[status]\nport = 8443\nhttp_port = 8443\n" + seg, []string{
			`ncpos.toml:3: status.http_port: 8443 is status.port too, want another port (or 0) for the redirect to HTTPS`}},
		{"redirect port out of range", "[status]\nhttp_port = -1\n" + seg, []string{
			`ncpos.toml:2: status.http_port: -1 is out of range, want 1..65535, or 0 for no plain HTTP redirect`}},
		{"weak password", "[status]\npassword = \"secret\"\n" + seg, []string{
			`ncpos.toml:2: status.password: the password has 6 characters, want at least 12`}},
		{"password in the clear and hashed", "[status]\npassword = \"a-long-password\"\npassword_hash = \"$2a$10$abcdefghijklmnopqrstuu5Tn1tq5pZQ9W2w0yV2n0f1qzXGm1Yv6\"\n" + seg, []string{
			`ncpos.toml:2: status.password: is set together with status.password_hash, want only one`}},
		{"hash that is not bcrypt", "[status]\npassword_hash = \"5f4dcc3b5aa765d61d8327deb882cf99\"\n" + seg, []string{
			`ncpos.toml:2: status.password_hash: not a bcrypt hash ($2a$/$2b$…): crypto/bcrypt: hashedSecret too short to be a bcrypted password`}},
		{"status names", "[status]\nnames = [\"fw1.campus.example\", \"198.51.100.7\", \"fw1.\", \"bad name!\", \"-x.example\"]\n" + seg, []string{
			`ncpos.toml:2: status.names[3]: "bad name!" is neither a DNS name nor an IP address, want e.g. "fw1.campus.example" or "198.51.100.7"`,
			`ncpos.toml:2: status.names[4]: "-x.example" is neither a DNS name nor an IP address, want e.g. "fw1.campus.example" or "198.51.100.7"`}},
		{"radius servers", "[auth]\nradius = [{server = \"192.0.2.10\", secret = \"short\"}, {server = \"radius host:x\", secret = \"a-long-enough-secret\"}]\n" + seg, []string{
			`ncpos.toml:2: auth.radius[0].secret: a secret of 5 characters, want 8 to 128 (RFC 2865 asks for one hard to guess)`,
			`ncpos.toml:2: auth.radius[1].server: "radius host:x" is not a server, want host or host:port, e.g. "192.0.2.10" or "radius.example.net:1812"`}},
		{"radius timing and classes", "[auth]\nradius_timeout = \"1m\"\nradius_retries = 9\nadmin_class = \"staff\"\nviewer_class = \"staff\"\n" + seg, []string{
			`ncpos.toml:2: auth.radius_timeout: 60s, want 100ms to 30s`,
			`ncpos.toml:3: auth.radius_retries: 9, want 0 to 5`,
			`ncpos.toml:5: auth.viewer_class: "staff" is auth.admin_class too: each role needs its own`}},
		{"ipv6 static", "[management]\nipv6 = \"static\"\naddress6 = \"fe80::5/64\"\ngateway6 = \"2001:db9::1\"\n" + seg, []string{
			`ncpos.toml:3: management.address6: "fe80::5/64" is not a usable global address, want e.g. "2001:db8::10/64" (the port keeps its link-local address by itself)`}},
		{"ipv6 gateway off the subnet", "[management]\nipv6 = \"static\"\naddress6 = \"2001:db8::5/64\"\ngateway6 = \"2001:db9::1\"\n" + seg, []string{
			`ncpos.toml:4: management.gateway6: 2001:db9::1 is outside 2001:db8::5/64, want an address on the management subnet or the router's link-local address`}},
		{"ipv6 modes", "[management]\nipv6 = \"dhcpv6\"\n" + seg, []string{
			`ncpos.toml:2: management.ipv6: "dhcpv6", want "slaac", "static" or "off"`}},
		{"ipv6 address without static", "[management]\naddress6 = \"2001:db8::5/64\"\n" + seg, []string{
			`ncpos.toml:2: management.address6: "2001:db8::5/64" is set but ipv6 = "slaac", want ipv6 = "static" for a static IPv6 address`}},
		{"ipv6 in address", "[management]\ndhcp = false\naddress = \"2001:db8::5/64\"\n" + seg, []string{
			`ncpos.toml:3: management.address: "2001:db8::5/64" is not an IPv4 address, want e.g. "192.0.2.10/24" (an IPv6 address goes in address6, with ipv6 = "static")`}},
		{"dns", "[management]\ndns = [\"192.0.2.53\", \"dns.example.net\", \"2001:db8::53\", \"192.0.2.54\"]\n" + seg, []string{
			`ncpos.toml:2: management.dns: 4 servers, want at most 3 (the resolver asks no more)`,
			`ncpos.toml:2: management.dns[1]: "dns.example.net" is not a DNS server's address, want e.g. "192.0.2.53" or "2001:db8::53"`}},
		{"time servers", "[time]\nservers = [\"ntp.example.net\", \"192.0.2.1:1123\", \"[2001:db8::1]\", \"ntp host\", \"192.0.2.1:1123\", \"x:99999\"]\n" + seg, []string{
			`ncpos.toml:2: time.servers[3]: address "ntp host": host name "ntp host" holds ' '; want a name or an address, with a port when it is not 123, e.g. "ntp.example.net", "192.0.2.1" or "[2001:db8::1]:123"`,
			`ncpos.toml:2: time.servers[4]: "192.0.2.1:1123" is given twice`,
			`ncpos.toml:2: time.servers[5]: address "x:99999": port "99999" is not a number from 1 to 65535; want a name or an address, with a port when it is not 123, e.g. "ntp.example.net", "192.0.2.1" or "[2001:db8::1]:123"`}},
		{"status port high", "[status]\nport = 70000\n" + seg, []string{
			`ncpos.toml:2: status.port: 70000 is out of range, want 1..65535`}},
		{"watchdog device", "[watchdog]\ndevice = \"/dev/../watchdog\"\n" + seg, []string{
			`ncpos.toml:2: watchdog.device: "/dev/../watchdog" is not an absolute path under /dev, want e.g. "/dev/watchdog"`}},
		{"watchdog timeout short", "[watchdog]\ntimeout = \"0s\"\n" + seg, []string{
			`ncpos.toml:2: watchdog.timeout: "0s" is too short, want between 1s and 3600s`}},
		{"watchdog timeout long", "[watchdog]\ntimeout = \"2h\"\n" + seg, []string{
			`ncpos.toml:2: watchdog.timeout: "7200s" is too long, want between 1s and 3600s`}},
		{"watchdog timeout fraction", "[watchdog]\ntimeout = \"30.5s\"\n" + seg, []string{
			`ncpos.toml:2: watchdog.timeout: "30.5s" is not a whole number of seconds (the hardware counts seconds), want e.g. "30s"`}},
		{"watchdog interval vs timeout", "[watchdog]\ntimeout = \"8s\"\n" + seg, []string{
			`ncpos.toml:1: watchdog.interval: "5s" is too long for timeout "8s", want less than 4s (half the timeout)`}},
		{"watchdog interval zero", "[watchdog]\ninterval = \"0s\"\n" + seg, []string{
			`ncpos.toml:2: watchdog.interval: "0s" is not positive, want e.g. "5s" (less than half the timeout)`}},
		{"watchdog boot grace", "[watchdog]\nboot_grace = \"-1s\"\n" + seg, []string{
			`ncpos.toml:2: watchdog.boot_grace: "-1s" is out of range, want between 0s and 3600s`}},
		{"forwarder", "[forwarder]\nengine = \"dpdk\"\nmode = \"nat\"\ncores = -1\nflow_table_size = 10\nxdp_mode = \"driver\"\n" + seg, []string{
			`ncpos.toml:2: forwarder.engine: unknown engine "dpdk", want "xdp" or "afxdp"`,
			`ncpos.toml:3: forwarder.mode: unknown mode "nat", want "forward" or "service"`,
			`ncpos.toml:4: forwarder.cores: -1 is negative, want 0 (all cores but one) or a count of cores`,
			`ncpos.toml:5: forwarder.flow_table_size: 10 is out of range, want between 1024 and 2147483648`,
			`ncpos.toml:6: forwarder.xdp_mode: unknown XDP mode "driver", want "auto", "native" or "generic"`}},
		{"segment name", "[[segment]]\nname = \"Seg_1\"\nports = [\"LAN1\", \"LAN2\"]\n", []string{
			`ncpos.toml:2: segment[0].name: "Seg_1" is not a valid segment name, want 1-15 of a-z, 0-9 and "-"`}},
		{"segment mtu", "[[segment]]\nname = \"seg1\"\nports = [\"LAN1\", \"LAN2\"]\nmtu = 1500\n[[segment]]\nname = \"seg2\"\nports = [\"LAN3\", \"LAN4\"]\nmtu = 9216\n", nil},
		{"segment mtu too small", "[[segment]]\nname = \"seg1\"\nports = [\"LAN1\", \"LAN2\"]\nmtu = 1400\n", []string{
			`ncpos.toml:4: segment[0].mtu: 1400 is out of range, want between 1500 and 9216 (0 for the default, 1522)`}},
		{"segment jumbo with afxdp", "[forwarder]\nengine = \"afxdp\"\n[[segment]]\nname = \"seg1\"\nports = [\"LAN1\", \"LAN2\"]\nmtu = 9000\n", []string{
			`ncpos.toml:6: segment[0].mtu: 9000 is more than the afxdp engine forwards (frames of up to 1792 bytes, MTU 1774); want engine "xdp" for jumbo frames`}},
		{"segment name missing", "[[segment]]\nports = [\"LAN1\", \"LAN2\"]\n", []string{
			`ncpos.toml:1: segment[0].name: "" is not a valid segment name, want 1-15 of a-z, 0-9 and "-"`}},
		{"segment name duplicate", "[[segment]]\nname = \"a\"\nports = [\"LAN1\", \"LAN2\"]\n[[segment]]\nname = \"a\"\nports = [\"LAN3\", \"LAN4\"]\n", []string{
			`ncpos.toml:5: segment[1].name: duplicate segment name "a", already used by segment[0]`}},
		{"segment one port", "[[segment]]\nname = \"a\"\nports = [\"LAN1\"]\n", []string{
			`ncpos.toml:3: segment[0].ports: has 1 ports, want exactly two`}},
		{"segment ports missing", "[[segment]]\nname = \"a\"\n", []string{
			`ncpos.toml:1: segment[0].ports: has 0 ports, want exactly two`}},
		{"segment unknown port", "platform = \"qemu\"\n[[segment]]\nname = \"a\"\nports = [\"LAN1\", \"LAN9\"]\n", []string{
			`ncpos.toml:4: segment[0].ports[1]: unknown port "LAN9" (platform "qemu" has MGMT, LAN1, LAN2, LAN3, LAN4)`}},
		{"segment management port", "[[segment]]\nname = \"a\"\nports = [\n  \"MGMT\",\n  \"LAN1\",\n]\n", []string{
			`ncpos.toml:4: segment[0].ports[0]: "MGMT" is the management port, want a data port`}},
		{"segment moved management port", "[management]\nport = \"LAN4\"\n[[segment]]\nname = \"a\"\nports = [\"MGMT\", \"LAN4\"]\n", []string{
			`ncpos.toml:5: segment[0].ports[1]: "LAN4" is the management port, want a data port`}},
		{"segment same port twice", "[[segment]]\nname = \"a\"\nports = [\"LAN1\", \"LAN1\"]\n", []string{
			`ncpos.toml:3: segment[0].ports[1]: port "LAN1" is listed twice, want two distinct ports`}},
		{"port in two segments", "[[segment]]\nname = \"a\"\nports = [\"LAN1\", \"LAN2\"]\n[[segment]]\nname = \"b\"\nports = [\"LAN3\", \"LAN2\"]\n", []string{
			`ncpos.toml:6: segment[1].ports[1]: port "LAN2" is already in segment "a", want each port in at most one segment`}},
		{"bypass unknown", "[[segment]]\nname = \"a\"\nports = [\"LAN1\", \"LAN2\"]\nbypass = \"pair9\"\n", []string{
			`ncpos.toml:4: segment[0].bypass: unknown bypass pair "pair9" (platform "qemu" has pair1, pair2)`}},
		{"bypass on generic", "platform = \"generic\"\n[[segment]]\nname = \"a\"\nports = [\"LAN1\", \"LAN2\"]\nbypass = \"pair1\"\n", []string{
			`ncpos.toml:5: segment[0].bypass: unknown bypass pair "pair1" (platform "generic" has no bypass pairs), want ""`}},
		{"bypass other ports", "[[segment]]\nname = \"a\"\nports = [\"LAN1\", \"LAN2\"]\nbypass = \"pair2\"\n", []string{
			`ncpos.toml:4: segment[0].bypass: bypass pair "pair2" joins LAN3 and LAN4, want a pair joining the segment's ports LAN1 and LAN2`}},
		{"bypass reversed ports ok", "[[segment]]\nname = \"a\"\nports = [\"LAN2\", \"LAN1\"]\nbypass = \"pair1\"\n", nil},
		{"syslog scheme", "[syslog]\ntarget = \"syslog.example:514\"\n" + seg, []string{
			`ncpos.toml:2: syslog.target: "syslog.example:514" is not a syslog target, want "udp://host:514", "tcp://host:514" or "tls://host:6514", or "" for no remote syslog`}},
		{"syslog no port", "[syslog]\ntarget = \"udp://192.0.2.1\"\n" + seg, []string{
			`ncpos.toml:2: syslog.target: "udp://192.0.2.1" has no valid port, want "udp://host:514", "tcp://host:514" or "tls://host:6514", or "" for no remote syslog`}},
		{"syslog path", "[syslog]\ntarget = \"tcp://h:514/x\"\n" + seg, []string{
			`ncpos.toml:2: syslog.target: "tcp://h:514/x" is not a syslog target, want "udp://host:514", "tcp://host:514" or "tls://host:6514", or "" for no remote syslog`}},
		{"syslog ok", "[syslog]\ntarget = \"tcp://[2001:db8::1]:514\"\n" + seg, nil},
		{"syslog tls without ca", "[syslog]\ntarget = \"tls://syslog.example:6514\"\n" + seg, []string{
			`ncpos.toml:1: syslog.ca: a tls:// target needs the PEM of the CA that signs the collector's certificate`}},
		{"syslog tls bad ca", "[syslog]\ntarget = \"tls://syslog.example:6514\"\nca = \"-----BEGIN CERTIFICATE-----\"\n" + seg, []string{
			`ncpos.toml:3: syslog.ca: holds no PEM certificate`}},
		{"syslog ca without tls", "[syslog]\ntarget = \"udp://syslog.example:514\"\nca = \"x\"\n" + seg, []string{
			`ncpos.toml:3: syslog.ca: set for a udp:// target, which does not use TLS`}},
		{"syslog tls ok", "[syslog]\ntarget = \"tls://syslog.example:6514\"\nca = \"\"\"\n" + testCA + "\n\"\"\"\n" + seg, nil},
		{"all errors, in line order", "hostname = \"a b\"\n[status]\nport = -1\n[[segment]]\nname = \"x\"\nports = [\"LAN1\"]\n", []string{
			`ncpos.toml:1: hostname: "a b" is not a valid hostname, want 1-63 letters, digits and "-", not starting or ending with "-"`,
			`ncpos.toml:3: status.port: -1 is out of range, want 1..65535`,
			`ncpos.toml:6: segment[0].ports: has 1 ports, want exactly two`}},
		{"unknown key and rule together", "[status]\nport = 0\ncolour = \"red\"\n" + seg, []string{
			`ncpos.toml:2: status.port: 0 is out of range, want 1..65535`,
			`ncpos.toml:3: status.colour: unknown key, want one of port, http_port, auth_read, password, password_hash, names`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := problems(t, tt.text)
			if !slices.Equal(got, tt.want) {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestValidateInMemory(t *testing.T) {
	c := Default()
	c.Status.Port = 0
	c.Segments[0].Ports = []string{"LAN1", "LAN7"}
	err := c.Validate()
	want := "status.port: 0 is out of range, want 1..65535\n" +
		`segment[0].ports[1]: unknown port "LAN7" (platform "qemu" has MGMT, LAN1, LAN2, LAN3, LAN4)`
	if err == nil || err.Error() != want {
		t.Errorf("Validate() = %v, want\n%s", err, want)
	}
	c.Status.Port = 8080
	c.Segments[0].Ports = []string{"LAN3", "LAN4"}
	c.Segments[0].Bypass = "pair2"
	if err := c.Validate(); err != nil {
		t.Errorf("Validate() = %v, want nil", err)
	}
}

// TestFlowTableMemory refuses, on the box that loads it, a flow table that
// would not fit in a quarter of its memory, naming file, line and field.
func TestFlowTableMemory(t *testing.T) {
	text := []byte("platform = \"qemu\"\n[forwarder]\nmode = \"service\"\nflow_table_size = 50000000\n[[segment]]\nname = \"seg1\"\nports = [\"LAN1\", \"LAN2\"]\n")
	// 512 MiB, a small appliance: 50M entries (about 9 GiB) do not fit.
	_, err := parse(&source{file: "ncpos.toml", data: text, mem: 512 << 20})
	if err == nil || !strings.Contains(err.Error(), "ncpos.toml:4: forwarder.flow_table_size: 50000000 entries need about 9155 MiB (192 bytes each,") {
		t.Fatalf("50M flows on 512 MiB: %v", err)
	}
	// Each CPU keeps its own share of every flow: 4 CPUs, 336 bytes each.
	_, err = parse(&source{file: "ncpos.toml", data: text, mem: 32 << 30, cpus: 4})
	if err == nil || !strings.Contains(err.Error(), "50000000 entries need about 16021 MiB (336 bytes each,") {
		t.Fatalf("50M flows, 4 CPUs, 32 GiB: %v", err)
	}
	// 64 GiB: they fit.
	if _, err := parse(&source{file: "ncpos.toml", data: text, mem: 64 << 30}); err != nil {
		t.Fatalf("50M flows on 64 GiB: %v", err)
	}
	// Unknown memory (an image built on a host): only the hard limit.
	if _, err := Parse("ncpos.toml", text); err != nil {
		t.Fatal(err)
	}
	big := []byte(strings.Replace(string(text), "50000000", "3000000000", 1))
	if _, err := Parse("ncpos.toml", big); err == nil || !strings.Contains(err.Error(), "forwarder.flow_table_size: 3000000000 is out of range") {
		t.Fatalf("3e9 flows: %v", err)
	}
}

// TestFlowTableMemoryForwardMode: forward mode keeps no flow table, so the
// default size is no burden on the smallest box.
func TestFlowTableMemoryForwardMode(t *testing.T) {
	if _, err := parse(&source{file: "default.toml", data: DefaultTOML(), mem: 256 << 20}); err != nil {
		t.Fatalf("the default configuration on a 256 MiB box: %v", err)
	}
}

// TestSegmentBypassDefault: a segment whose ports a relay joins is behind
// that relay even when the file does not say so.
func TestSegmentBypassDefault(t *testing.T) {
	c, err := Parse("ncpos.toml", []byte("platform = \"qemu\"\n[[segment]]\nname = \"seg1\"\nports = [\"LAN2\", \"LAN1\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Segments[0].Bypass != "pair1" {
		t.Errorf("seg1 on LAN1/LAN2: bypass %q, want pair1", c.Segments[0].Bypass)
	}
	c, err = Parse("ncpos.toml", []byte("platform = \"generic\"\n[[segment]]\nname = \"seg1\"\nports = [\"LAN1\", \"LAN2\"]\n"))
	if err != nil || c.Segments[0].Bypass != "" {
		t.Errorf("generic (no relays): %+v, %v", c, err)
	}
}

// testCA is a certificate for syslog.example (its key is not kept).
const testCA = "-----BEGIN CERTIFICATE-----\nMIIBhjCCAS2gAwIBAgIUWzwZFvw9ucR9wVsj4CYEinBQr+swCgYIKoZIzj0EAwIw\nGTEXMBUGA1UEAwwOc3lzbG9nLmV4YW1wbGUwHhcNMjYxMjAyMDUyOTU2WhcNMzYx\nMTI5MDUyOTU2WjAZMRcwFQYDVQQDDA5zeXNsb2cuZXhhbXBsZTBZMBMGByqGSM49\nAgEGCCqGSM49AwEHA0IABAE13S/dSd83xvqEXpdxuOu5QrApLq0cay1p8qHfBTf9\nfAYapb6KK0HHAOufB7o1XbPyj16y7ufxOrUQ0zZ3EiSjUzBRMB0GA1UdDgQWBBQw\nissBpI+lawPNgDQG5nuEvQ26zzAfBgNVHSMEGDAWgBQwissBpI+lawPNgDQG5nuE\nvQ26zzAPBgNVHRMBAf8EBTADAQH/MAoGCCqGSM49BAMCA0cAMEQCICaH4n5VKUc6\nLQ8PVrYw4uOHGpjKYLIMw0tEKVKdZjWmAiBAH2PvzO5OwXIg5II1WG5tTPDso7Aq\nXtvBOmRT3k6q+A==\n-----END CERTIFICATE-----"

// TestStartHoldDownDefault: left out, the start hold-down is 1 s, or the
// hold-down when that is shorter; given, it is what was given, longer
// than the hold-down too (a network that needs time after power-on).
func TestStartHoldDownDefault(t *testing.T) {
	for _, c := range []struct {
		bypass string
		want   time.Duration
	}{
		{"", time.Second},
		{"hold_down = \"30s\"\n", time.Second},
		{"hold_down = \"400ms\"\n", 400 * time.Millisecond},
		{"hold_down = \"400ms\"\nstart_hold_down = \"2s\"\n", 2 * time.Second},
		{"start_hold_down = \"1m\"\n", time.Minute},
	} {
		cfg, err := Parse("ncpos.toml", []byte("[bypass]\n"+c.bypass+seg))
		if err != nil {
			t.Fatalf("%q: %v", c.bypass, err)
		}
		if got := cfg.Bypass.StartHoldDown.Duration; got != c.want {
			t.Errorf("%q: start hold-down %v, want %v", c.bypass, got, c.want)
		}
	}
}
