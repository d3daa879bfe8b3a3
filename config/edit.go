package config

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// managementKeys are the settings SetManagementAddress writes, in the
// order it adds those the table lacks.
var managementKeys = []string{"dhcp", "address", "gateway", "ipv6", "address6", "gateway6"}

// SetManagementAddress returns text with the management port's addressing
// (dhcp, address, gateway, ipv6, address6, gateway6) set as m says and
// every other line, comments among them, as it was: a change made at the
// console shows in the history as the lines it changed. It refuses a
// text it cannot edit that way (keys written in another form), rather
// than rewrite the operator's file.
func SetManagementAddress(name string, text []byte, m Management) ([]byte, error) {
	values := map[string]string{
		"dhcp": strconv.FormatBool(m.DHCP), "address": strconv.Quote(m.Address), "gateway": strconv.Quote(m.Gateway),
		"ipv6": strconv.Quote(m.IPv6), "address6": strconv.Quote(m.Address6), "gateway6": strconv.Quote(m.Gateway6),
	}
	lines := strings.Split(string(text), "\n")
	header := regexp.MustCompile(`^\s*\[\s*management\s*\]\s*(#.*)?$`)
	start := -1
	for i, l := range lines {
		if header.MatchString(l) {
			start = i
			break
		}
	}
	if start < 0 {
		if len(lines) > 0 && lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1]
		}
		lines = append(lines, "", "[management]")
		start = len(lines) - 1
		lines = append(lines, "")
	}
	end := len(lines)
	for i := start + 1; i < len(lines); i++ {
		if strings.HasPrefix(strings.TrimSpace(lines[i]), "[") {
			end = i
			break
		}
	}
	last := start // the table's last key line
	done := map[string]bool{}
	for i := start + 1; i < end; i++ {
		key, _, ok := strings.Cut(lines[i], "=")
		if !ok || strings.HasPrefix(strings.TrimSpace(lines[i]), "#") {
			continue
		}
		last = i
		k := strings.TrimSpace(key)
		if v, ok := values[k]; ok {
			lines[i] = k + " = " + v
			done[k] = true
		}
	}
	var add []string
	for _, k := range managementKeys {
		if !done[k] {
			add = append(add, k+" = "+values[k])
		}
	}
	lines = append(lines[:last+1], append(add, lines[last+1:]...)...)
	out := []byte(strings.Join(lines, "\n"))
	c, err := Parse(name, out)
	if err != nil {
		return nil, err
	}
	got := c.Management
	if got.DHCP != m.DHCP || got.Address != m.Address || got.Gateway != m.Gateway || got.IPv6 != m.IPv6 ||
		got.Address6 != m.Address6 || got.Gateway6 != m.Gateway6 {
		return nil, fmt.Errorf("%s: its [management] table is written in a form this edit does not know; change it from afar instead", name)
	}
	return out, nil
}
