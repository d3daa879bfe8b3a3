package fleet

import (
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/ncpos/ncpos/boxtls"
	"github.com/ncpos/ncpos/internal/durable"
)

// Prometheus file-based service discovery: TargetsFile lists every box
// with an address, CAFile holds the certificates the boxes proved
// themselves with. A scrape job reads both (see monitoring/README.md):
//
//	scheme: https
//	tls_config: {ca_file: <dir>/ncpos-boxes.pem, server_name: ncpos-appliance}
//	file_sd_configs: [{files: [<dir>/ncpos-targets.json]}]
//
// Prometheus rereads both when they change, so a box added by a host
// command is scraped without a reload.
const (
	TargetsFile = "ncpos-targets.json"
	caFile      = "ncpos-boxes.pem"
)

// Group is one entry of a file-SD list.
type Group struct {
	Targets []string          `json:"targets"`
	Labels  map[string]string `json:"labels"`
}

// Export is what ExportSD wrote, and which boxes it left out and why.
type Export struct {
	Targets, CA string
	Boxes       int
	Skipped     []string
}

// ExportSD writes the targets and the CA file into dir, each in one
// rename, so Prometheus never reads half a file.
func ExportSD(inv *Inventory, dir string) (*Export, error) {
	boxes, err := inv.Boxes()
	if err != nil {
		return nil, err
	}
	groups := []Group{}
	var pems []byte
	ex := &Export{Targets: filepath.Join(dir, TargetsFile), CA: filepath.Join(dir, caFile)}
	for _, b := range boxes {
		if why := scrapable(b); why != "" {
			ex.Skipped = append(ex.Skipped, b.Name+": "+why)
			continue
		}
		labels := map[string]string{"box": b.Name}
		if b.Build != "" {
			labels["build"] = b.Build
		}
		groups = append(groups, Group{Targets: []string{b.Address}, Labels: labels})
		pems = append(pems, b.Certificate...)
		ex.Boxes++
	}
	js, err := json.MarshalIndent(groups, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	// The CA file first: a target never appears before its certificate.
	if err := durable.WriteFile(ex.CA, pems, 0o644); err != nil {
		return nil, fmt.Errorf("writing %s: %w", ex.CA, err)
	}
	if err := durable.WriteFile(ex.Targets, append(js, '\n'), 0o644); err != nil {
		return nil, fmt.Errorf("writing %s: %w", ex.Targets, err)
	}
	return ex, nil
}

// scrapable says why Prometheus could not scrape b, or "".
func scrapable(b Box) string {
	if b.Address == "" {
		return "no address yet"
	}
	blk, _ := pem.Decode([]byte(b.Certificate))
	if blk == nil {
		return "no certificate recorded yet (ncpos fleet status records it)"
	}
	cert, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		return "its recorded certificate: " + err.Error()
	}
	if fp, err := boxtls.Fingerprint(cert.Raw); err != nil || fp != b.Fingerprint {
		return "its recorded certificate is not the key recorded for it"
	}
	if !slices.Contains(cert.DNSNames, boxtls.FleetName) {
		return fmt.Sprintf("its certificate does not name %s (a key made by an older build): Prometheus could not check it", boxtls.FleetName)
	}
	return ""
}
