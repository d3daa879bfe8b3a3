package selfinstall

import (
	"github.com/ncpos/ncpos/install"
	"github.com/ncpos/ncpos/internal/job"
	"github.com/ncpos/ncpos/web/api"
)

// DiskInstaller is the box's own Installer: it lists the disks of the
// system it runs on and installs to one of them with package install's
// job (install to internal disk from the appliance itself).
type DiskInstaller struct {
	job install.Job
}

func (i *DiskInstaller) Disks() ([]api.InstallDisk, string, error) {
	src, err := install.BootDisk("/")
	if err != nil {
		return nil, "", err
	}
	disks, err := install.ListDisks("/")
	if err != nil {
		return nil, src, err
	}
	var out []api.InstallDisk
	for _, d := range disks {
		if d.Transport == "loop" {
			continue
		}
		out = append(out, api.InstallDisk{
			Path: d.Path, Model: d.Model, SizeBytes: d.Size, Transport: d.Transport,
			Removable: d.Removable, Eligible: d.Eligible(), Why: d.WhyNot(),
		})
	}
	return out, src, nil
}

func (i *DiskInstaller) Start(target string, wipePerm bool, by string) error {
	return i.job.Start(target, wipePerm, by)
}

func (i *DiskInstaller) Job() job.State[install.Progress] { return i.job.State() }
