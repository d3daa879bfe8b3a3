package api

import "time"

// Host is the machine's load, memory and sensors: the status's "host",
// and GET /api/v1/host. It carries what people read; the raw CPU times
// behind ncpos_cpu_seconds_total stay with statusd.
type Host struct {
	BootTime time.Time  `json:"boot_time,omitzero"`
	CPUs     []CPULoad  `json:"cpus"`
	Load     [3]float64 `json:"load"`
	Memory   Memory     `json:"memory"`
	Sensors  []Sensor   `json:"sensors"`
}

// CPULoad is how busy one CPU was between two samples.
type CPULoad struct {
	CPU         int     `json:"cpu"`
	BusyPercent float64 `json:"busy_percent"`
}

// Memory is the gist of /proc/meminfo.
type Memory struct {
	TotalBytes     uint64  `json:"total_bytes"`
	AvailableBytes uint64  `json:"available_bytes"`
	UsedPercent    float64 `json:"used_percent"`
}

// Sensor is one hwmon reading: a temperature in °C or a fan in RPM.
type Sensor struct {
	Chip  string  `json:"chip"`  // hwmon name, e.g. "coretemp", "nct6775"
	Label string  `json:"label"` // the driver's label, else the file's name
	Kind  string  `json:"kind"`  // "temperature" or "fan"
	Value float64 `json:"value"` // °C or RPM
	Unit  string  `json:"unit"`
	Crit  float64 `json:"crit,omitempty"` // critical temperature, when the driver knows it
}
