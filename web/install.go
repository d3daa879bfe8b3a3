package web

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
	"github.com/ncpos/ncpos/web/reply"
)

// InstallDisk is a disk the appliance could install itself onto.
type InstallDisk struct {
	Path      string `json:"path"`
	Model     string `json:"model"`
	SizeBytes int64  `json:"size_bytes"`
	Transport string `json:"transport"`
	Removable bool   `json:"removable"`
	Eligible  bool   `json:"eligible"`
	Why       string `json:"why_not,omitempty"` // why it is not eligible
}

// InstallJob is the state of the install-to-internal-disk job.
type InstallJob struct {
	State   string `json:"state"` // idle, running, done, failed
	Target  string `json:"target,omitempty"`
	Phase   string `json:"phase,omitempty"` // writing, verifying
	Done    int64  `json:"done_bytes"`
	Total   int64  `json:"total_bytes"`
	Result  string `json:"result,omitempty"`
	Error   string `json:"error,omitempty"`
	By      string `json:"by,omitempty"`
	Started string `json:"started,omitempty"`
}

// Installer installs the running appliance onto an internal disk (package
// install does it; statusd wires it in).
type Installer interface {
	Disks() ([]InstallDisk, string, error) // candidates and the disk the system runs from
	Start(target string, wipePerm bool, by string) error
	Job() job.State[install.Progress]
}

// installJob is the API's view of the install job.
func installJob(st job.State[install.Progress]) InstallJob {
	j := InstallJob{State: st.State, Target: st.Progress.Target, Phase: st.Progress.Phase, Done: st.Progress.Done,
		Total: st.Progress.Total, Result: st.Result, Error: st.Error, By: st.By}
	if !st.Started.IsZero() {
		j.Started = st.Started.UTC().Format(time.RFC3339)
	}
	return j
}

func (s *Server) handleInstallInfo(w http.ResponseWriter, r *http.Request) {
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

func (s *Server) handleInstall(w http.ResponseWriter, r *http.Request) {
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
	by := who(r)
	if err := s.Installer.Start(req.Device, req.WipePerm, by); err != nil {
		reply.Error(w, http.StatusConflict, err.Error())
		return
	}
	s.event(events.Warning, events.KindControl, []string{"action", "install", "device", req.Device, "by", by},
		fmt.Sprintf("install to internal disk %s started by %s", req.Device, by))
	ipc.WriteJSONCode(w, http.StatusAccepted, installJob(s.Installer.Job()))
}
