package sysinfo

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// InitRecord is what services/init tells the other daemons about boot: which
// watchdog it claimed before gokrazy.Boot, how ports were mapped, which
// configuration took effect. It lives in /run/ncpos/init.json (tmpfs).
type InitRecord struct {
	BuildID   string    `json:"build_id"`
	MachineID string    `json:"machine_id"` // /perm/machine-id: the box's identity across updates
	Started   time.Time `json:"started"`
	DevMount  string    `json:"dev_mount"` // "kernel" or "init" (who mounted devtmpfs)

	Watchdog struct {
		Device   string `json:"device"`
		Identity string `json:"identity,omitempty"`
		FD       int    `json:"fd"` // init's descriptor, duplicated by watchdogd
		Error    string `json:"error,omitempty"`
		// GokrazyPinger says whether gokrazy's own unconditional pinger could
		// open the device after init claimed it (it must not).
		GokrazyPinger string `json:"gokrazy_pinger"`
	} `json:"watchdog"`

	Config struct {
		Source   string   `json:"source"` // file that took effect, or "built-in default"
		Rejected []string `json:"rejected,omitempty"`
	} `json:"config"`

	ManagementPort      string            `json:"management_port"`
	ManagementInterface string            `json:"management_interface"`
	Ports               map[string]string `json:"ports"` // front-panel name -> kernel name
	PortErrors          string            `json:"port_errors,omitempty"`
	Services            []string          `json:"services"`
}

// initRecordPath is where init writes its record under the run folder.
func initRecordPath(runDir string) string { return filepath.Join(runDir, "init.json") }

// WriteInitRecord writes r atomically (temporary file, then rename).
func WriteInitRecord(runDir string, r *InitRecord) error {
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	tmp := initRecordPath(runDir) + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("init record: %w", err)
	}
	return os.Rename(tmp, initRecordPath(runDir))
}

// ReadInitRecord reads the record init wrote.
func ReadInitRecord(runDir string) (*InitRecord, error) {
	b, err := os.ReadFile(initRecordPath(runDir))
	if err != nil {
		return nil, err
	}
	var r InitRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", initRecordPath(runDir), err)
	}
	return &r, nil
}
