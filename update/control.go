package update

import (
	"context"
	"errors"
	"io"
	"time"
)

// Reboot asks gokrazy to reboot (a full reboot through the firmware, not
// kexec, so the bootloader reads the new configuration). The connection may
// drop while the appliance goes down; that is success.
func (c *Client) Reboot(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err := c.gokrazy(ctx, "POST", "/reboot?kexec=off", nil)
	if err != nil && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)) {
		return nil
	}
	return err
}

// Bypass asks the appliance to put its segments into bypass before the
// update. Appliances without bypassd answer with an error, which the
// caller reports as a warning.
func (c *Client) Bypass(ctx context.Context, reason string) error {
	return errors.New("this appliance offers no bypass control yet")
}
