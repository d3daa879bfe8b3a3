// Package selfinstall serves the box's install of itself onto an internal
// disk (package install writes it): GET /api/v1/install lists the disks
// and the job, POST /api/v1/control/install starts it.
package selfinstall

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/ncpos/ncpos/events"
	"github.com/ncpos/ncpos/install"
	"github.com/ncpos/ncpos/internal/job"
	"github.com/ncpos/ncpos/ipc"
	"github.com/ncpos/ncpos/web/api"
	"github.com/ncpos/ncpos/web/caller"
	"github.com/ncpos/ncpos/web/reply"
)

// Installer installs the running appliance onto an internal disk (package
// install does it; statusd wires it in).
type Installer interface {
	Disks() ([]api.InstallDisk, string, error) // candidates and the disk the system runs from
	Start(target string, wipePerm bool, by string) error
	Job() job.State[install.Progress]
}

// installJob is the API's view of the install job.
func installJob(st job.State[install.Progress]) api.InstallJob {
	j := api.InstallJob{State: st.State, Target: st.Progress.Target, Phase: st.Progress.Phase, Done: st.Progress.Done,
		Total: st.Progress.Total, Result: st.Result, Error: st.Error, By: st.By}
	if !st.Started.IsZero() {
		j.Started = st.Started.UTC().Format(time.RFC3339)
	}
	return j
}

// API serves the install routes.
type API struct {
	Installer Installer // nil: the routes answer 503
	Events    *events.Log
}

// Info serves GET /api/v1/install: the disks, the one the box runs from,
// and the job.
func (s *API) Info(w http.ResponseWriter, r *http.Request) {
	if s.Installer == nil {
		reply.Error(w, http.StatusServiceUnavailable, "install to internal disk is not available here")
		return
	}
	disks, source, err := s.Installer.Disks()
	if err != nil {
		reply.Error(w, http.StatusInternalServerError, err.Error())
		return
	}
	ipc.WriteJSON(w, map[string]any{"source": source, "disks": disks, "job": installJob(s.Installer.Job())})
}

// Start serves POST /api/v1/control/install.
func (s *API) Start(w http.ResponseWriter, r *http.Request) {
	var req api.InstallRequest
	if !reply.DecodeJSON(w, r, &req, 0) {
		return
	}
	if s.Installer == nil {
		reply.Error(w, http.StatusServiceUnavailable, "install to internal disk is not available here")
		return
	}
	if !strings.HasPrefix(req.Device, "/dev/") || strings.Contains(req.Device, "..") {
		reply.Error(w, http.StatusBadRequest, fmt.Sprintf("device %q: want a disk under /dev, e.g. /dev/sda", req.Device))
		return
	}
	if req.Confirm != req.Device {
		reply.Error(w, http.StatusBadRequest, "confirm must repeat the device name: everything on it will be overwritten")
		return
	}
	by := caller.Who(r)
	if err := s.Installer.Start(req.Device, req.WipePerm, by); err != nil {
		reply.Error(w, http.StatusConflict, err.Error())
		return
	}
	s.Events.Note(events.Warning, events.KindControl, []string{"action", "install", "device", req.Device, "by", by},
		fmt.Sprintf("install to internal disk %s started by %s", req.Device, by))
	ipc.WriteJSONCode(w, http.StatusAccepted, installJob(s.Installer.Job()))
}
