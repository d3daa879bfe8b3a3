package appliance

import (
	"errors"
	"fmt"
	"log"
	"net/http"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/ncpos/ncpos/appliance/initapi"
	"github.com/ncpos/ncpos/appliance/mgmtport"
	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/ipc"
)

// box holds the box's own settings, which init takes at boot and again in
// place when asked on its socket (POST /reconfigure, initapi): its
// hostname and its management port's address.
type box struct {
	config string         // the configuration file (BootConfig)
	port   *mgmtport.Port // nil: the management port is not on this box
	resolv string         // the resolver's configuration (resolvConf); "": left alone
}

// take sets the hostname, the management address and the DNS servers
// cfg asks for.
func (b *box) take(cfg *config.Config) error {
	var errs []error
	if cur, _ := os.Hostname(); cfg.Hostname != "" && cfg.Hostname != cur {
		if err := unix.Sethostname([]byte(cfg.Hostname)); err != nil {
			errs = append(errs, fmt.Errorf("setting the hostname to %q: %w", cfg.Hostname, err))
		}
	}
	if b.port != nil {
		if err := b.port.Set(cfg.Management); err != nil {
			errs = append(errs, err)
		}
	}
	if b.resolv != "" {
		if err := writeResolv(b.resolv, cfg.Management.DNS); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// handler serves init's socket: GET /status is the box's settings as they
// are, and POST /reconfigure reads the configuration every daemon runs on
// (BootConfig) and takes them in place.
func (b *box) handler() http.Handler {
	mux := ipc.Handler(ipc.AlwaysLive(initapi.Name), func() any { return b.state() }, nil)
	mux.HandleFunc("POST /reconfigure", func(w http.ResponseWriter, r *http.Request) {
		cfg, err := config.Load(b.config)
		if err != nil {
			http.Error(w, "reading the configuration: "+err.Error(), http.StatusUnprocessableEntity)
			return
		}
		if err := b.take(cfg); err != nil {
			http.Error(w, err.Error(), http.StatusUnprocessableEntity)
			return
		}
		res := b.state()
		log.Printf("reconfigured: hostname %s, management port %s on %s", res.Hostname, res.Management.Interface, strings.Join(res.Management.Addresses, ", "))
		ipc.WriteJSON(w, res)
	})
	return mux
}

// state is the box's settings as they are.
func (b *box) state() initapi.Reconfigured {
	var res initapi.Reconfigured
	res.Hostname, _ = os.Hostname()
	if b.port != nil {
		st, err := b.port.State()
		if err != nil {
			log.Printf("management port: %v", err)
		}
		res.Management = initapi.Management(st)
	}
	return res
}
