package bypass

import (
	"github.com/ncpos/ncpos/bypass/bypassapi"
	"github.com/ncpos/ncpos/config"
)

// writesOf is state s's entry in a backend's table (config.Writes), nil
// when the table has none.
func writesOf[T any](w *config.Writes[[]T], s bypassapi.State) []T {
	if w == nil {
		return nil
	}
	if p := w.Of(string(s)); p != nil {
		return *p
	}
	return nil
}

// anyWrites says whether a table selects any state at all.
func anyWrites[T any](w *config.Writes[[]T]) bool {
	for _, s := range bypassapi.States {
		if len(writesOf(w, s)) > 0 {
			return true
		}
	}
	return false
}

// recogniseOrder is the order in which a read-back is matched against a
// table's states: the one with the most specific writes first.
var recogniseOrder = []bypassapi.State{bypassapi.Disconnect, bypassapi.Bypass, bypassapi.Normal}

// tableCaps fills c.States and c.Events from a backend's tables: a state
// can be set when it has writes, and an event's default can be set to a
// state when that state has writes in the event's table.
func tableCaps[T any](c *bypassapi.Caps, state *config.Writes[[]T], event func(name string) *config.Writes[[]T]) {
	for _, s := range bypassapi.States {
		if len(writesOf(state, s)) > 0 {
			c.States = append(c.States, s)
		}
	}
	for _, e := range bypassapi.Events {
		for _, s := range bypassapi.States {
			if len(writesOf(event(string(e)), s)) > 0 {
				c.Events[e] = append(c.Events[e], s)
			}
		}
	}
}
