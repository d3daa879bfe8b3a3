package web

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/ncpos/ncpos/internal/testenv"
)

// TestServeOnlyOnManagementInterface runs in a network namespace of its
// own (the test re-executes itself with CLONE_NEWNET, as root): a veth
// pair stands for the management port (with an address) and a data port.
// statusd must answer on the management address only: not on loopback,
// not on the data port even when it gets an address, and it must follow
// the management port's addresses as they come and go.
func TestServeOnlyOnManagementInterface(t *testing.T) {
	if testenv.InNetNS(t) {
		netnsChild(t)
	}
}

func netnsChild(t *testing.T) {
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	lo, err := netlink.LinkByName("lo")
	must(err)
	must(netlink.LinkSetUp(lo))
	must(netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "ncpt-mgmt"}, PeerName: "ncpt-data"}))
	mgmt, err := netlink.LinkByName("ncpt-mgmt")
	must(err)
	data, err := netlink.LinkByName("ncpt-data")
	must(err)
	addr := func(link netlink.Link, cidr string) *netlink.Addr {
		a, err := netlink.ParseAddr(cidr)
		must(err)
		must(netlink.AddrAdd(link, a))
		return a
	}
	first := addr(mgmt, "192.0.2.1/24")
	must(netlink.LinkSetUp(mgmt))
	must(netlink.LinkSetUp(data))

	const port = 8480
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- ServeOnInterface(ctx, "ncpt-mgmt", port, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, "statusd")
		}), 100*time.Millisecond)
	}()

	c := &http.Client{Timeout: time.Second}
	serves := func(host string) bool {
		resp, err := c.Get("http://" + net.JoinHostPort(host, strconv.Itoa(port)) + "/")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	}
	eventually := func(host string, want bool) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); serves(host) != want; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("serving on %s: %v, want %v", host, !want, want)
			}
		}
		t.Logf("%-28s served: %v", host, want)
	}
	eventually("192.0.2.1", true)
	eventually("127.0.0.1", false)
	// The data port's IPv6 link-local address (the kernel adds one).
	if addrs, _ := netlink.AddrList(data, netlink.FAMILY_V6); len(addrs) > 0 {
		eventually(addrs[0].IP.String()+"%ncpt-data", false)
	}
	// Even a data port that gets an address must stay dark.
	addr(data, "198.51.100.1/24")
	time.Sleep(300 * time.Millisecond) // three polls
	eventually("198.51.100.1", false)
	// Addresses of the management port come and go (DHCP).
	addr(mgmt, "203.0.113.2/24") // another subnet: deleting a primary address drops its secondaries
	eventually("203.0.113.2", true)
	must(netlink.AddrDel(mgmt, first))
	eventually("192.0.2.1", false)
	eventually("203.0.113.2", true)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
