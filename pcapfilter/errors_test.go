package pcapfilter

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestErrorMessages(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want string // the whole message
	}{
		{"tcp port http", `filter: at 9: expected a port number after "port", got "http"`},
		{"tcp[13] & 2 != 0", `filter: at 0: "tcp[13]" arithmetic expressions are not supported`},
		{"host foo", `filter: at 5: "foo": names are not resolved on the box; give an address`},
		{"gateway snup", `filter: at 0: "gateway" is not supported`},
	} {
		_, err := Compile(tc.expr)
		if err == nil || err.Error() != tc.want {
			t.Errorf("Compile(%q) = %v, want %s", tc.expr, err, tc.want)
		}
	}
}

var errorCases = []struct {
	expr   string
	offset int
	want   string // in the message
}{
	// outside the subset
	{"tcp[13] & 2 != 0", 0, `"tcp[13]" arithmetic`},
	{"ip and ether[0] & 1 != 0", 7, `"ether[0]" arithmetic`},
	{"ip[6:2] & 0x1fff = 0", 0, `"ip[6:2]" arithmetic`},
	{"len - 14 > 100", 0, `"len -" arithmetic`},
	{"len > foo", 0, `"len > foo" arithmetic`},
	{"5 < len", 0, `"5 <" arithmetic`},
	{"ip and & 1", 7, `"&" arithmetic`},
	{"gateway snup", 0, `"gateway" is not supported`},
	{"decnet host 10.123", 0, `"decnet" is not supported`},
	{"pppoes 0x27 and ip", 0, `"pppoes" is not supported`},
	{"geneve", 0, `"geneve" is not supported`},
	{"ip6 protochain 6", 4, `"protochain" is not supported`},
	{"ip broadcast", 3, "ip broadcast is not supported"},
	{"arp multicast", 4, "arp multicast is not supported"},
	{`ether proto \atalk`, 12, "IPX and AppleTalk"},
	{"ether proto 0xe0", 12, "IPX and AppleTalk"},
	// names
	{"host foo", 5, "names are not resolved on the box; give an address"},
	{"dst host router.example", 9, "names are not resolved"},
	{"ether host foo", 11, "expected a MAC address"},
	{"tcp port http", 9, `expected a port number after "port", got "http"`},
	{"port 80 or ssh", 11, `expected a port number after "port", got "ssh"`},
	{"portrange 10-x", 10, "expected a port range"},
	{"portrange ftp-data", 10, "expected a port range"},
	{"ip proto foo", 9, `unknown protocol "foo"`},
	{"ip proto tcp", 9, `write it \tcp`},
	// numbers and addresses
	{"port 70000", 5, "port number 70000 is greater than 65535"},
	{"portrange 1-70000", 10, "greater than 65535"},
	{"port 08", 5, "non-octal digits"},
	{"port 4294967296", 5, "overflows 32 bits"},
	{"vlan 4096", 5, "VLAN ID 4096 is greater than 4095"},
	{"mpls 1048576", 5, "MPLS label 1048576 is greater than 1048575"},
	{"host 10.0.0.256", 5, `invalid IPv4 address "10.0.0.256"`},
	{"host 1.2.3.4.5", 5, "invalid IPv4 address"},
	{"host 2001:db8::zz", 5, "invalid IPv6 address"},
	{"host fe80::1%eth0", 5, `"fe80::1%" arithmetic`},
	{"net 10.0.0.1/8", 4, `"10.0.0.1/8": non-network bits set`},
	{"net 10.0.0.1 mask 255.0.0.0", 4, "non-network bits set"},
	{"net 10.0.0.0/33", 4, "at most 32"},
	{"net 10.0.0.0 mask 255", 18, "expected a dotted netmask"},
	{"net 10/8", 4, "write the net as a dotted address"},
	{"host 10.0.0.0/8", 5, `a mask is only for "net"`},
	{"net 2001:db8::1/32", 4, "non-network bits set"},
	{"net 2001:db8::/129", 4, "at most 128"},
	{"host 2001:db8::/32", 5, `a prefix length is only for "net"`},
	{"net 2001:db8:: mask ffff::", 20, `"mask" is for IPv4`},
	{"host 10.0.0.1/", 14, "expected a prefix length"},
	{"net 10.0.0.0 mask", 17, "expected a netmask"},
	// qualifiers that do not fit
	{"ip6 host 10.0.0.1", 9, `"ip6" cannot qualify the IPv4 address`},
	{"ip host ::1", 8, `"ip" cannot qualify the IPv6 address`},
	{"tcp host 10.0.0.1", 9, `"tcp" cannot qualify`},
	{"tcp src 80", 8, `"tcp" cannot qualify`},
	{"host 02:00:00:00:00:01", 5, `match it with "ether host"`},
	{"ether net 02:00:00:00:00:01", 10, "a MAC address is a host"},
	{"ether host 10.0.0.1", 11, "expected a MAC address"},
	{"ip port 80", 8, `"ip" cannot qualify port`},
	{"port 80/8", 5, "a port takes no mask"},
	{"tcp proto 6", 10, `"tcp" cannot qualify proto`},
	{"proto 6/8", 6, "a protocol takes no mask"},
	{"src proto 6", 4, `"proto" cannot follow src or dst`},
	{"ether", 0, `expected src, dst, host, proto, broadcast or multicast after "ether"`},
	{"mpls and vlan", 9, "vlan cannot follow mpls"},
	{"mpls and arp", 9, "only ip and ip6 can be matched inside mpls"},
	{"mpls and host 10.0.0.1 and arp host 10.0.0.2", 36, "inside mpls"},
	// the grammar
	{"80", 0, `"80" needs a qualifier`},
	{"tcp or 80", 7, `"80" needs a qualifier`},
	{"(host 10.0.0.1) and 10.0.0.2", 20, `"10.0.0.2" needs a qualifier`},
	{"port 80 or 10.0.0.1", 11, `expected a port number after "port", got "10.0.0.1"`},
	{"host", 4, "expected an address after \"host\", got the end of the expression"},
	{"host and", 5, `expected an address after "host", got "and"`},
	{"(tcp", 4, `expected ")" to close the "(" at 0`},
	{"tcp)", 3, `")" without a matching "("`},
	{"tcp udp", 4, `expected "and" or "or" before "udp"`},
	{"tcp and", 7, "the expression ends where a primitive was expected"},
	{"not", 3, "the expression ends"},
	{"and tcp", 0, `expected a primitive before "and"`},
	{"tcp or or udp", 7, `expected a primitive before "or"`},
	{"ip and ()", 8, `expected a primitive, got ")"`},
	{"ip && || ip6", 6, `expected a primitive, got "||"`},
	{"mask 255.0.0.0", 0, `"mask" must follow the address of a net`},
	{"less foo", 5, `expected a length after "less"`},
	{"greater", 7, "expected a length"},
	{"len", 3, "expected a comparison"},
	{"tcp $", 4, "unexpected character '$'"},
	{`ip and \`, 7, `a name must follow "\"`},
	{strings.Repeat("(", 300) + "ip" + strings.Repeat(")", 300), 256, "nests deeper than 256"},
	{strings.Repeat("not ", 300) + "ip", 1024, "nests deeper than 256"},
	// libpcap refuses these too
	{"ip6 multicast and ip multicast", 0, "the expression matches no frame"},
	{"tcp and udp", 0, "the expression matches no frame"},
}

func TestErrors(t *testing.T) {
	for _, tc := range errorCases {
		_, err := Compile(tc.expr)
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("Compile(%q) = %v, want a *SyntaxError", tc.expr, err)
			continue
		}
		if se.Offset != tc.offset || !strings.Contains(se.Msg, tc.want) {
			t.Errorf("Compile(%q) = %v, want at %d: ...%s...", tc.expr, err, tc.offset, tc.want)
		}
		if prefix := fmt.Sprintf("filter: at %d: ", se.Offset); !strings.HasPrefix(err.Error(), prefix) {
			t.Errorf("Compile(%q) = %q, want it to start with %q", tc.expr, err, prefix)
		}
	}
}

// TestTooLong checks that a program past classic BPF's limit is refused,
// however long the expression, and quickly.
func TestTooLong(t *testing.T) {
	for _, tc := range []struct {
		first, more string
		n           int
	}{
		{"host 10.0.0.1", " or host 10.%d.0.1", 1000}, // compiled, then found too long
		{"port 1", " or port %d", 5000},               // too many tests to try
	} {
		var b strings.Builder
		b.WriteString(tc.first)
		for i := 2; i <= tc.n; i++ {
			fmt.Fprintf(&b, tc.more, i%250)
		}
		_, err := Compile(b.String())
		if !errors.Is(err, errTooLong) || !strings.Contains(err.Error(), "limit of 4096 instructions") {
			t.Errorf("Compile(%s ... %d alternatives) = %v, want ErrTooLong naming the limit", tc.first, tc.n, err)
		}
	}
}
