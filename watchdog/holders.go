package watchdog

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/ncpos/ncpos/internal/procs"
	"github.com/ncpos/ncpos/watchdog/watchdogapi"
)

// Holders lists the processes under procRoot (normally /proc) holding one of
// the watchdog device nodes open. It proves who, if anyone, keeps the box
// alive: on ncpos that must be init (which only holds it) and watchdogd
// (which pets it), never gokrazy's unconditional pinger.
func Holders(procRoot string) ([]watchdogapi.Holder, error) {
	proc := procs.Dir(procRoot)
	ps, err := proc.List()
	if err != nil {
		return nil, err
	}
	var hs []watchdogapi.Holder
	for _, p := range ps {
		fdDir := proc.Path(p.PID, "fd")
		fds, err := os.ReadDir(fdDir)
		if err != nil {
			continue // process gone or not ours to read
		}
		for _, fd := range fds {
			target, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
			if err != nil || !isWatchdogNode(target) {
				continue
			}
			n, _ := strconv.Atoi(fd.Name())
			hs = append(hs, watchdogapi.Holder{PID: p.PID, Name: p.Name, FD: n, Path: target})
		}
	}
	sort.Slice(hs, func(i, j int) bool {
		if hs[i].PID != hs[j].PID {
			return hs[i].PID < hs[j].PID
		}
		return hs[i].FD < hs[j].FD
	})
	return hs, nil
}

func isWatchdogNode(target string) bool {
	base := filepath.Base(target)
	return strings.HasPrefix(target, "/dev/") && (base == "watchdog" || strings.HasPrefix(base, "watchdog") && isDigits(base[len("watchdog"):]))
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
