package main

import (
	"github.com/ncpos/ncpos/install"
	"github.com/ncpos/ncpos/internal/job"
	"github.com/ncpos/ncpos/web"
)

// installer adapts package install to the web API's Installer: install to
// internal disk from the appliance itself.
type installer struct {
	job install.Job
}

func (i *installer) Disks() ([]web.InstallDisk, string, error) {
	src, err := install.BootDisk("/")
	if err != nil {
		return nil, "", err
	}
	disks, err := install.ListDisks("/")
	if err != nil {
		return nil, src, err
	}
	var out []web.InstallDisk
	for _, d := range disks {
		if d.Transport == "loop" {
			continue
		}
		out = append(out, web.InstallDisk{
			Path: d.Path, Model: d.Model, SizeBytes: d.Size, Transport: d.Transport,
			Removable: d.Removable, Eligible: d.Eligible(), Why: d.WhyNot(),
		})
	}
	return out, src, nil
}

func (i *installer) Start(target string, wipePerm bool, by string) error {
	return i.job.Start(target, wipePerm, by)
}

func (i *installer) Job() job.State[install.Progress] { return i.job.State() }
