package boxaddr

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in        string
		host      string
		port      int
		given     bool
		str, fail string
	}{
		{in: "box1", host: "box1", port: 443, str: "box1:443"},
		{in: "box1.example.net/", host: "box1.example.net", port: 443, str: "box1.example.net:443"},
		{in: "127.0.0.1", host: "127.0.0.1", port: 443, str: "127.0.0.1:443"},
		{in: "127.0.0.1:8480", host: "127.0.0.1", port: 8480, given: true, str: "127.0.0.1:8480"},
		{in: "box1:8443", host: "box1", port: 8443, given: true, str: "box1:8443"},
		{in: "2001:db8::7", host: "2001:db8::7", port: 443, str: "[2001:db8::7]:443"},
		{in: "[2001:db8::7]", host: "2001:db8::7", port: 443, str: "[2001:db8::7]:443"},
		{in: "[2001:db8::7]:8480", host: "2001:db8::7", port: 8480, given: true, str: "[2001:db8::7]:8480"},
		{in: "[fe80::1%eth0]:8480", host: "fe80::1%eth0", port: 8480, given: true, str: "[fe80::1%eth0]:8480"},
		{in: "2001:0db8:0:0::7", host: "2001:db8::7", port: 443, str: "[2001:db8::7]:443"},
		{in: "", fail: "no address"},
		{in: "https://box1/", fail: "not a URL"},
		{in: "box1:0", fail: "port \"0\""},
		{in: "box1:https", fail: "port \"https\""},
		{in: "box1:70000", fail: "port \"70000\""},
		{in: "[box1]:443", fail: "brackets hold an IPv6"},
		{in: "[10.0.0.1]", fail: "brackets hold an IPv6"},
		{in: "box 1", fail: "holds ' '"},
		{in: "a..b", fail: "empty or too long label"},
		{in: "[2001:db8::7]:", fail: "port \"\""},
	} {
		a, err := Parse(c.in, 443)
		if c.fail != "" {
			if err == nil || !strings.Contains(err.Error(), c.fail) {
				t.Errorf("Parse(%q) = %+v, %v; want an error saying %q", c.in, a, err, c.fail)
			}
			continue
		}
		if err != nil || a.Host != c.host || a.Port != c.port || a.PortGiven != c.given || a.String() != c.str {
			t.Errorf("Parse(%q) = %+v (%s), %v; want %s port %d given %v (%s)", c.in, a, a, err, c.host, c.port, c.given, c.str)
		}
	}
}
