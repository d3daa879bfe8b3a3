package vm

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"sync"
	"time"
)

// Event is an asynchronous event QEMU reported on its QMP socket, with the
// host time it arrived.
type Event struct {
	Name string
	Data map[string]any
	At   time.Time
}

// events follows QEMU's QMP socket and keeps the events it reports (a
// WATCHDOG event says exactly when the emulated watchdog fired, which the
// guest cannot say about itself).
type events struct {
	mu   sync.Mutex
	list []Event
	conn net.Conn
	wmu  sync.Mutex // one command at a time on conn

	// Answers awaited by Query, by the id its command carried.
	waiting map[string]chan qmpAnswer
	nextID  int
}

type qmpAnswer struct {
	Return json.RawMessage `json:"return"`
	Error  *struct {
		Class string `json:"class"`
		Desc  string `json:"desc"`
	} `json:"error"`
}

// followQMP connects to the QMP socket at path (retrying while QEMU starts)
// and records events until the connection closes.
func (e *events) followQMP(path string) error {
	var conn net.Conn
	var err error
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if conn, err = net.Dial("unix", path); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("QMP: %w", err)
		}
	}
	rd := bufio.NewReader(conn)
	if _, err := rd.ReadBytes('\n'); err != nil { // greeting
		conn.Close()
		return fmt.Errorf("QMP greeting: %w", err)
	}
	if _, err := conn.Write([]byte(`{"execute":"qmp_capabilities"}` + "\n")); err != nil {
		conn.Close()
		return err
	}
	e.conn = conn
	go func() {
		defer conn.Close()
		for {
			line, err := rd.ReadBytes('\n')
			if err != nil {
				return
			}
			var m struct {
				Event string         `json:"event"`
				Data  map[string]any `json:"data"`
				ID    string         `json:"id"`
				qmpAnswer
			}
			if json.Unmarshal(line, &m) != nil {
				continue
			}
			if m.Event == "" {
				e.mu.Lock()
				if ch := e.waiting[m.ID]; ch != nil {
					ch <- m.qmpAnswer
					delete(e.waiting, m.ID)
				}
				e.mu.Unlock()
				continue
			}
			e.mu.Lock()
			e.list = append(e.list, Event{Name: m.Event, Data: m.Data, At: time.Now()})
			e.mu.Unlock()
		}
	}()
	return nil
}

// Events returns the QMP events seen so far.
func (v *VM) Events() []Event {
	v.events.mu.Lock()
	defer v.events.mu.Unlock()
	return append([]Event(nil), v.events.list...)
}

// Execute sends a QMP command (such as set_link, which pulls or plugs a
// NIC's cable) without waiting for its answer; what it did shows in the
// guest.
func (v *VM) Execute(command string, args map[string]any) error {
	b, err := json.Marshal(map[string]any{"execute": command, "arguments": args})
	if err != nil {
		return err
	}
	v.events.wmu.Lock()
	defer v.events.wmu.Unlock()
	if v.events.conn == nil {
		return fmt.Errorf("QMP: not connected")
	}
	if _, err := v.events.conn.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("QMP %s: %w", command, err)
	}
	return nil
}

// Query sends a QMP command and returns what QEMU answered (its "return"
// value), or QEMU's error.
func (v *VM) Query(command string, args map[string]any) (json.RawMessage, error) {
	e := &v.events
	ch := make(chan qmpAnswer, 1)
	e.mu.Lock()
	e.nextID++
	id := fmt.Sprintf("q%d", e.nextID)
	if e.waiting == nil {
		e.waiting = map[string]chan qmpAnswer{}
	}
	e.waiting[id] = ch
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		delete(e.waiting, id)
		e.mu.Unlock()
	}()
	cmd := map[string]any{"execute": command, "id": id}
	if args != nil {
		cmd["arguments"] = args
	}
	b, err := json.Marshal(cmd)
	if err != nil {
		return nil, err
	}
	e.wmu.Lock()
	if e.conn == nil {
		e.wmu.Unlock()
		return nil, fmt.Errorf("QMP: not connected")
	}
	_, err = e.conn.Write(append(b, '\n'))
	e.wmu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("QMP %s: %w", command, err)
	}
	select {
	case a := <-ch:
		if a.Error != nil {
			return nil, fmt.Errorf("QMP %s: %s: %s", command, a.Error.Class, a.Error.Desc)
		}
		return a.Return, nil
	case <-time.After(30 * time.Second):
		return nil, fmt.Errorf("QMP %s: no answer in 30 s", command)
	}
}

// DiskWrites is the bytes and write requests the guest has issued to its
// boot disk (QEMU's block statistics of the first IDE drive), whatever
// the guest's own counters say.
func (v *VM) DiskWrites() (bytes, ops uint64, err error) {
	raw, err := v.Query("query-blockstats", nil)
	if err != nil {
		return 0, 0, err
	}
	var devs []struct {
		Device string `json:"device"`
		QDev   string `json:"qdev"`
		Stats  struct {
			WrBytes      uint64 `json:"wr_bytes"`
			WrOperations uint64 `json:"wr_operations"`
		} `json:"stats"`
	}
	if err := json.Unmarshal(raw, &devs); err != nil {
		return 0, 0, fmt.Errorf("query-blockstats: %w", err)
	}
	for _, d := range devs {
		if d.Device == "ide0-hd0" {
			return d.Stats.WrBytes, d.Stats.WrOperations, nil
		}
	}
	return 0, 0, fmt.Errorf("query-blockstats: no boot disk (ide0-hd0) among %d devices", len(devs))
}

// ThrottleDiskWrites limits the guest's writes to its boot disk to bps
// bytes a second (0: no limit), as a slow CF card would.
func (v *VM) ThrottleDiskWrites(bps int64) error {
	return v.Execute("block_set_io_throttle", map[string]any{
		"device": "ide0-hd0", "bps": 0, "bps_rd": 0, "bps_wr": bps, "iops": 0, "iops_rd": 0, "iops_wr": 0,
	})
}

// SetLink plugs (up) or pulls (down) the cable of the NIC whose netdev is
// id (lan1 ... for the data ports).
func (v *VM) SetLink(id string, up bool) error {
	return v.Execute("set_link", map[string]any{"name": id, "up": up})
}
