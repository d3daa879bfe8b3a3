package snmp

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/ncpos/ncpos/internal/durable"
)

// EngineFile keeps the SNMP engine ID and how often the engine
// started on /perm: managers localize SNMPv3 keys to the engine ID and
// refuse a boots counter that went back (RFC 3414 2.2.2), so both must
// survive reboots and updates.
const EngineFile = "/perm/ncpos/snmp/engine.json"

type engineState struct {
	EngineID string `json:"engine_id"` // hex
	Boots    uint32 `json:"boots"`
}

// LoadEngine reads the engine's state, making it on first use, and counts
// this start. Without a writable /perm the engine works for this boot with
// what it could read, and says so. A file that reads and does not parse is
// replaced; one that cannot be read (after a few tries) is left as it is,
// and the engine runs this boot with an ID of its own, since a new kept ID
// would change every user's localized keys for good (RFC 3414).
func LoadEngine(file string) (id []byte, boots uint32, note string, err error) {
	var st engineState
	b, err := durable.ReadFile(file)
	switch {
	case err == nil:
		if jerr := json.Unmarshal(b, &st); jerr != nil {
			note = fmt.Sprintf("%s is corrupt (%v): a new engine ID", file, jerr)
			st = engineState{}
		} else if id, err = hex.DecodeString(st.EngineID); err != nil || len(id) < 5 || len(id) > 32 {
			note = fmt.Sprintf("%s holds no valid engine ID: a new one", file)
			st, id = engineState{}, nil
		}
	case !errors.Is(err, fs.ErrNotExist):
		if id, err = NewEngineID(32473); err != nil {
			return nil, 0, "", err
		}
		return id, 1, fmt.Sprintf("reading %s: %v: an engine ID for this boot only, the kept one is left as it is (managers must discover it again)", file, err), nil
	}
	if id == nil {
		if id, err = NewEngineID(32473); err != nil {
			return nil, 0, "", err
		}
		st.Boots = 0
	}
	st.EngineID, st.Boots = hex.EncodeToString(id), st.Boots+1
	out, _ := json.Marshal(st)
	if werr := os.MkdirAll(filepath.Dir(file), 0o700); werr == nil {
		werr = durable.WriteFile(file, append(out, '\n'), 0o600)
		if werr != nil {
			note = fmt.Sprintf("keeping the SNMP engine on %s: %v (managers must discover it again after a reboot)", file, werr)
		}
	} else {
		note = fmt.Sprintf("keeping the SNMP engine: %v (managers must discover it again after a reboot)", werr)
	}
	return id, st.Boots, note, nil
}
