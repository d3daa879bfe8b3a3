package main

import (
	"fmt"
	"log"
	"path/filepath"
	"time"

	"github.com/ncpos/ncpos/boxtls"
	"github.com/ncpos/ncpos/internal/kmsg"
	"github.com/ncpos/ncpos/ipc"
)

// TLSDir keeps the box's TLS identity on /perm: it survives updates and
// reboots, so the hosts that pinned the box keep trusting it.
const TLSDir = "/perm/ncpos/tls"

// identity loads or makes the box's TLS identity. Without a writable
// /perm the box still serves HTTPS, with a key made for this boot only,
// and says so (note); it never falls back to plain HTTP.
func identity(dir, hostname, kmsgPath string) (id *boxtls.Identity, note string, err error) {
	id, err = boxtls.Ensure(dir, hostname, time.Now())
	if err != nil {
		note = fmt.Sprintf("not kept (%v): a new key at every boot, hosts must be told each one", err)
		log.Printf("TLS identity: %v", err)
		id, err = boxtls.Ensure(filepath.Join(ipc.Dir(), "tls"), hostname, time.Now())
		if err != nil {
			return nil, "", err
		}
	}
	how := "kept in " + id.Path
	switch {
	case id.Replaced != "":
		how = "made now, replacing a damaged one (" + id.Replaced + ")"
	case id.Created:
		how = "made now, kept in " + id.Path
	}
	if note != "" {
		how = note
	}
	announce(kmsgPath, fmt.Sprintf("ncpos: statusd: TLS key %s (%s)", id.Fingerprint, how))
	return id, note, nil
}

// announce puts a line on the kernel log, which the serial console and the
// boot log show: the fingerprint is how an operator at the console checks
// what a host command pinned on first contact.
func announce(path, line string) {
	log.Print(line)
	if path == "" {
		return
	}
	if err := kmsg.Write(path, kmsg.Notice, line); err != nil {
		log.Print(err)
	}
}
