// Package fleet is the host's inventory of the boxes it has built,
// installed and updated: where each is reached, the key it proved itself
// with, the build it runs. From it the host reports on every box at once
// (Status) and tells Prometheus where to scrape (file-based service
// discovery).
package fleet

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ncpos/ncpos/internal/durable"
	"golang.org/x/sys/unix"
)

// Box is one box of the inventory.
type Box struct {
	Name string `json:"name"` // as the host commands know it (-host, -name)
	// Address is host:port of its statusd (HTTPS); "" until a command
	// reached it (an installed card not yet booted).
	Address string `json:"address,omitempty"`
	// Certificate is the PEM of the certificate the box presented under
	// its pinned key, for a NOC's tools to verify it with.
	Certificate string    `json:"certificate,omitempty"`
	Fingerprint string    `json:"fingerprint,omitempty"`
	Build       string    `json:"build,omitempty"` // the build it runs, as it last said
	Installed   time.Time `json:"installed,omitzero"`
	Updated     time.Time `json:"updated,omitzero"`
	Seen        time.Time `json:"seen,omitzero"` // last answered a host command
}

// Inventory is the file that holds the boxes, ~/.config/ncpos/fleet.json.
// Every change is made under a lock and written in one rename, so two
// commands at once and a crash both leave it whole.
type Inventory struct {
	Path string
}

type file struct {
	Boxes []Box `json:"boxes"`
}

// Default is the inventory in the user's configuration directory.
func Default() (*Inventory, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return nil, err
	}
	return &Inventory{Path: filepath.Join(dir, "ncpos", "fleet.json")}, nil
}

// Boxes returns every box, by name.
func (inv *Inventory) Boxes() ([]Box, error) {
	f, err := inv.read()
	if err != nil {
		return nil, err
	}
	return f.Boxes, nil
}

// Get returns the named box.
func (inv *Inventory) Get(name string) (Box, bool, error) {
	boxes, err := inv.Boxes()
	if err != nil {
		return Box{}, false, err
	}
	for _, b := range boxes {
		if b.Name == name {
			return b, true, nil
		}
	}
	return Box{}, false, nil
}

// Update changes the named box with change, adding it if it is not there.
func (inv *Inventory) Update(name string, change func(*Box)) error {
	if err := checkName(name); err != nil {
		return err
	}
	return inv.locked(func(f *file) error {
		i := slices.IndexFunc(f.Boxes, func(b Box) bool { return b.Name == name })
		if i < 0 {
			f.Boxes = append(f.Boxes, Box{Name: name})
			i = len(f.Boxes) - 1
		}
		change(&f.Boxes[i])
		f.Boxes[i].Name = name
		return nil
	})
}

// Remove takes the named box out.
func (inv *Inventory) Remove(name string) error {
	return inv.locked(func(f *file) error {
		i := slices.IndexFunc(f.Boxes, func(b Box) bool { return b.Name == name })
		if i < 0 {
			return fmt.Errorf("%s: no box %q", inv.Path, name)
		}
		f.Boxes = slices.Delete(f.Boxes, i, i+1)
		return nil
	})
}

func checkName(name string) error {
	if name == "" || len(name) > 253 || strings.ContainsAny(name, " \t\n/\\") {
		return fmt.Errorf("box name %q: want a host name or address, without spaces or slashes", name)
	}
	return nil
}

func (inv *Inventory) read() (*file, error) {
	var f file
	b, err := os.ReadFile(inv.Path)
	if errors.Is(err, os.ErrNotExist) {
		return &f, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("the inventory %s: %w (fix or remove it; ncpos commands add boxes again as they reach them)", inv.Path, err)
	}
	for _, b := range f.Boxes {
		if err := checkName(b.Name); err != nil {
			return nil, fmt.Errorf("the inventory %s: %w", inv.Path, err)
		}
	}
	return &f, nil
}

// locked runs change on the inventory under an exclusive lock and writes
// the result.
func (inv *Inventory) locked(change func(*file) error) error {
	if err := os.MkdirAll(filepath.Dir(inv.Path), 0o700); err != nil {
		return err
	}
	lock, err := os.OpenFile(inv.Path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("locking %s: %w", inv.Path, err)
	}
	f, err := inv.read()
	if err != nil {
		return err
	}
	if err := change(f); err != nil {
		return err
	}
	slices.SortFunc(f.Boxes, func(a, b Box) int { return strings.Compare(a.Name, b.Name) })
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := durable.WriteFile(inv.Path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", inv.Path, err)
	}
	return nil
}
