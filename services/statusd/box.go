package main

import (
	"context"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/ncpos/ncpos/appliance"
	"github.com/ncpos/ncpos/config"
)

// boxTaker takes the box's own settings in place, which init set at boot:
// its hostname. The management port's address is taken only at boot in
// this build (a change to it is refused).
type boxTaker struct{}

func (boxTaker) Takes(setting string) bool { return setting == "hostname" }

func (boxTaker) Take(context.Context) error {
	cfg, err := config.Load(appliance.BootConfig)
	if err != nil {
		return err
	}
	if cur, _ := os.Hostname(); cfg.Hostname == "" || cfg.Hostname == cur {
		return nil
	}
	if err := unix.Sethostname([]byte(cfg.Hostname)); err != nil {
		return fmt.Errorf("setting the hostname to %q: %w", cfg.Hostname, err)
	}
	return nil
}
