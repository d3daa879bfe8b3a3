package config

import (
	"strconv"

	"github.com/ncpos/ncpos/boxaddr"
)

// Time is where the box takes its time from: NTP servers, asked by
// statusd's client, which steps the clock once when it is far off and
// slews it after. A box without a working clock battery starts from the
// last time it kept on /perm until a server answers.
type Time struct {
	// Servers are NTP servers, names or addresses, each with a port when
	// it is not 123.
	Servers []string `toml:"servers"`
}

// NTPPort is the port an NTP server without one is asked on.
const NTPPort = 123

// maxTimeServers bounds the servers asked each round.
const maxTimeServers = 8

func defaultTime() Time { return Time{Servers: []string{}} }

func (c *Config) validateTime(add addFunc) {
	if len(c.Time.Servers) > maxTimeServers {
		add("time.servers", "%d servers, want at most %d", len(c.Time.Servers), maxTimeServers)
	}
	seen := map[string]bool{}
	for i, s := range c.Time.Servers {
		p := "time.servers[" + strconv.Itoa(i) + "]"
		a, err := boxaddr.Parse(s, NTPPort)
		if err != nil {
			add(p, "%v; want a name or an address, with a port when it is not 123, e.g. \"ntp.example.net\", \"192.0.2.1\" or \"[2001:db8::1]:123\"", err)
			continue
		}
		if seen[a.String()] {
			add(p, "%q is given twice", s)
		}
		seen[a.String()] = true
	}
}
