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
			}
			if json.Unmarshal(line, &m) != nil || m.Event == "" {
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

// SetLink plugs (up) or pulls (down) the cable of the NIC whose netdev is
// id (lan1 ... for the data ports).
func (v *VM) SetLink(id string, up bool) error {
	return v.Execute("set_link", map[string]any{"name": id, "up": up})
}
