// Package snmptest runs Debian's net-snmp tools in tests: the commands a
// NOC would use against a box (snmpget, snmpwalk, snmpbulkwalk) and
// snmptrapd as a trap receiver.
package snmptest

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ncpos/ncpos/internal/testenv"
)

// MIBDir is where scripts/deps.sh puts the IETF MIBs.
func MIBDir() string {
	d := os.Getenv("XDG_CACHE_HOME")
	if d == "" {
		home, _ := os.UserHomeDir()
		d = filepath.Join(home, ".cache")
	}
	return filepath.Join(d, "ncpos", "mibs")
}

// Tool runs one net-snmp command with numeric output and no MIBs loaded
// (-On -m ""), one try of a second, and returns what it printed. The error
// carries the output of a command that failed.
func Tool(t testing.TB, name string, args ...string) (string, error) {
	t.Helper()
	path := testenv.LookPath(t, testenv.Tools, name, "snmp")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	full := append([]string{"-On", "-m", "", "-t", "1", "-r", "0"}, args...)
	cmd := exec.CommandContext(ctx, path, full...)
	// A fresh home: net-snmp caches discovered engines and keys under
	// ~/.snmp, which must not leak between tests.
	cmd.Env = append(os.Environ(), "SNMP_PERSISTENT_DIR="+t.TempDir(), "HOME="+t.TempDir(), "SNMPCONFPATH="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %v: %s", name, strings.Join(full, " "), err, out)
	}
	return string(out), nil
}

// Walk parses snmpwalk's -On output into OID → value text.
func Walk(out string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		oid, val, ok := strings.Cut(line, " = ")
		if ok {
			m[oid] = val
		}
	}
	return m
}

// Trapd is a running snmptrapd.
type Trapd struct {
	Port int

	mu    sync.Mutex
	lines []string
}

// V3User is an SNMPv3 user whose traps snmptrapd accepts from the
// sending engine EngineID (hex), with authPriv.
type V3User struct {
	EngineID, Name, Auth, AuthKey, Priv, PrivKey string
}

// StartTrapd runs snmptrapd on 127.0.0.1 in the foreground, accepting
// SNMPv2c traps with community and, when v3 is not nil, SNMPv3 traps of
// that user. It is stopped when the test ends.
func StartTrapd(t testing.TB, community string, v3 *V3User) *Trapd {
	t.Helper()
	path := testenv.LookPath(t, testenv.Tools, "snmptrapd", "snmptrapd")
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := pc.LocalAddr().(*net.UDPAddr).Port
	pc.Close()
	dir := t.TempDir()
	conf := fmt.Sprintf("authCommunity log %s\ndisableAuthorization no\n", community)
	if v3 != nil {
		conf += fmt.Sprintf("createUser -e 0x%s %s %s %s %s %s\nauthUser log %s priv\n",
			v3.EngineID, v3.Name, v3.Auth, v3.AuthKey, v3.Priv, v3.PrivKey, v3.Name)
	}
	if err := os.WriteFile(filepath.Join(dir, "snmptrapd.conf"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, path, "-f", "-Lo", "-On", "-m", "", "-C", "-c", filepath.Join(dir, "snmptrapd.conf"),
		"-p", filepath.Join(dir, "pid"), fmt.Sprintf("udp:127.0.0.1:%d", port))
	cmd.Env = append(os.Environ(), "SNMP_PERSISTENT_DIR="+dir, "HOME="+dir)
	// Gone with the test binary, even after a timeout's panic.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	td := &Trapd{Port: port}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			td.mu.Lock()
			td.lines = append(td.lines, sc.Text())
			td.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		cancel()
		cmd.Wait()
		<-done
		if t.Failed() {
			t.Logf("snmptrapd printed:\n%s", strings.Join(td.Lines(), "\n"))
		}
	})
	// snmptrapd says so when it listens.
	deadline := time.Now().Add(20 * time.Second)
	for !td.Has("NET-SNMP version") {
		if time.Now().After(deadline) {
			t.Fatalf("snmptrapd did not start:\n%s", strings.Join(td.Lines(), "\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	return td
}

// Lines is everything snmptrapd printed so far.
func (td *Trapd) Lines() []string {
	td.mu.Lock()
	defer td.mu.Unlock()
	return append([]string(nil), td.lines...)
}

// Has tells whether a printed line contains s.
func (td *Trapd) Has(s string) bool {
	for _, l := range td.Lines() {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

// WaitFor waits up to d for a printed line containing s.
func (td *Trapd) WaitFor(s string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if td.Has(s) {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}
