package mgmtport

import (
	"io"
	"log"
	"os/exec"
	"syscall"
	"time"
)

// restartAfter is how long the DHCP client rests after it exits before
// it runs again.
const restartAfter = time.Second

// client runs the DHCP client, again whenever it exits, until stopped.
type client struct {
	quit chan struct{}
	done chan struct{}
}

func startClient(argv []string, out io.Writer) *client {
	c := &client{quit: make(chan struct{}), done: make(chan struct{})}
	go c.run(argv, out)
	return c
}

func (c *client) run(argv []string, out io.Writer) {
	defer close(c.done)
	for {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			log.Printf("management port: starting the DHCP client: %v", err)
		} else {
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			select {
			case err := <-exited:
				log.Printf("management port: the DHCP client exited (%v); running it again", err)
			case <-c.quit:
				cmd.Process.Signal(syscall.SIGTERM)
				select {
				case <-exited:
				case <-time.After(2 * time.Second):
					cmd.Process.Kill()
					<-exited
				}
				return
			}
		}
		select {
		case <-c.quit:
			return
		case <-time.After(restartAfter):
		}
	}
}

// stop ends the client and waits until it has exited.
func (c *client) stop() {
	close(c.quit)
	<-c.done
}
