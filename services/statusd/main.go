// Command statusd serves the appliance's status page, JSON API and /healthz
// on the management interface only.
package main

import (
	"context"
	"flag"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/ncpos/ncpos/ipc"
	"github.com/ncpos/ncpos/web"
)

func main() {
	var (
		ifname = flag.String("interface", "eth0", "management interface to serve on (only its addresses)")
		port   = flag.Int("port", 80, "HTTP port")
	)
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()

	c := &web.Collector{Root: "/", RunDir: ipc.Dir()}
	go func() {
		mux := ipc.Handler(func() error { return nil }, func() any { return c.Collect(ctx) }, nil)
		if err := ipc.Serve(ctx, ipc.Dir(), "statusd", mux); err != nil {
			log.Printf("statusd: %v", err)
		}
	}()
	if err := web.ServeOnInterface(ctx, *ifname, *port, web.NewHandler(c), 2*time.Second); err != nil {
		log.Fatalf("statusd: %v", err)
	}
}
