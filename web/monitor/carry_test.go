package monitor

import (
	"encoding"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ncpos/ncpos/bypass/bypassapi"
	"github.com/ncpos/ncpos/config"
	"github.com/ncpos/ncpos/config/versions"
	"github.com/ncpos/ncpos/events"
	"github.com/ncpos/ncpos/forwarder/forwarderapi"
	"github.com/ncpos/ncpos/sysinfo"
	"github.com/ncpos/ncpos/watchdog/watchdogapi"
	"github.com/ncpos/ncpos/web/api"
)

var textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()

// jsonShape lists the JSON fields of t, each with the shape of its value:
// what a client that decodes the JSON sees, whatever the Go types.
func jsonShape(t reflect.Type) []string {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t == reflect.TypeFor[time.Time]() {
		return nil
	}
	var out []string
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			out = append(out, jsonShape(f.Type)...)
			continue
		}
		if name == "" {
			name = f.Name
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		kind := ft.Kind().String()
		switch {
		case ft.Implements(textMarshaler) || reflect.PointerTo(ft).Implements(textMarshaler):
			kind = "string" // time.Time, events.Severity
		case ft.Kind() == reflect.Struct || ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
			kind = "{" + strings.Join(jsonShape(ft), " ") + "}"
		}
		out = append(out, name+":"+kind)
	}
	slices.Sort(out)
	return out
}

// TestCarriedShapes: what the API carries of the daemons' reports and the
// box's records has the JSON of what it carries, so that the API's own
// types pass them on whole.
func TestCarriedShapes(t *testing.T) {
	for _, c := range []struct {
		api, carried reflect.Type
	}{
		{reflect.TypeFor[api.Event](), reflect.TypeFor[events.Event]()},
		{reflect.TypeFor[api.Version](), reflect.TypeFor[versions.Version]()},
		{reflect.TypeFor[api.Change](), reflect.TypeFor[config.Change]()},
		{reflect.TypeFor[api.Override](), reflect.TypeFor[bypassapi.Override]()},
		{reflect.TypeFor[api.Petter](), reflect.TypeFor[watchdogapi.Status]()},
		{reflect.TypeFor[api.Holder](), reflect.TypeFor[watchdogapi.Holder]()},
		{reflect.TypeFor[api.PortSetting](), reflect.TypeFor[forwarderapi.PortSetting]()},
		{reflect.TypeFor[api.Neighbor](), reflect.TypeFor[forwarderapi.Neighbor]()},
		{reflect.TypeFor[api.CaptureRequest](), reflect.TypeFor[forwarderapi.CaptureRequest]()},
		{reflect.TypeFor[api.Mount](), reflect.TypeFor[sysinfo.Mount]()},
		{reflect.TypeFor[api.DiskWrites](), reflect.TypeFor[sysinfo.DiskWrites]()},
	} {
		a, b := jsonShape(c.api), jsonShape(c.carried)
		if len(a) == 0 || !slices.Equal(a, b) {
			t.Errorf("%v carries %v, but their JSON differs:\n  %v\n  %v", c.api, c.carried, a, b)
		}
	}
}
