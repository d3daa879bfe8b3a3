package config

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestPlanCoversEverySetting: every setting of the schema says how it
// takes effect, and the table names no setting the schema lacks.
func TestPlanCoversEverySetting(t *testing.T) {
	seen := map[string]bool{}
	forEachSetting(reflect.TypeFor[Config](), "", func(path string, _ []int) {
		seen[path] = true
		sp, ok := settingPlans[path]
		switch {
		case !ok:
			t.Errorf("setting %s has no plan entry: add it to settingPlans", path)
		case sp.effect == EffectReboot && sp.why == "":
			t.Errorf("setting %s needs a reboot and does not say why", path)
		case sp.effect != EffectReboot && sp.taker == "":
			t.Errorf("setting %s does not say who takes it", path)
		}
	})
	for path := range settingPlans {
		if !seen[path] {
			t.Errorf("settingPlans names %s, which is not a setting", path)
		}
	}
	if len(seen) < 40 {
		t.Errorf("found %d settings, want the whole schema", len(seen))
	}
}

// change returns another value of v's type than v.
func change(t *testing.T, v reflect.Value) {
	t.Helper()
	switch {
	case v.Type() == reflect.TypeFor[Duration]():
		v.Set(reflect.ValueOf(Duration{v.Interface().(Duration).Duration + time.Second}))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(v.String() + "x")
	case reflect.Int:
		v.SetInt(v.Int() + 1)
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Slice:
		v.Set(reflect.Append(v, reflect.New(v.Type().Elem()).Elem()))
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		m.SetMapIndex(reflect.ValueOf("9000"), reflect.ValueOf("1Mpps"))
		v.Set(m)
	default:
		t.Fatalf("no way to change a %s", v.Type())
	}
}

// TestPlanEverySetting changes each setting of the default configuration
// on its own: the plan has that one change, with the setting's effect.
func TestPlanEverySetting(t *testing.T) {
	forEachSetting(reflect.TypeFor[Config](), "", func(path string, index []int) {
		def, next := Default(), Default()
		v := fieldAt(reflect.ValueOf(next).Elem(), index)
		want := path
		if strings.HasPrefix(path, "segment.") {
			seg := reflect.ValueOf(&next.Segments[0]).Elem()
			f, _ := fieldByKey(seg.Type(), strings.TrimPrefix(path, "segment."))
			v, want = seg.FieldByIndex(f.Index), "segment[seg1]"
		} else if l := settingList(path); l != "" {
			want = l
		}
		change(t, v)
		plan := Plan(def, next)
		if path == "segment.name" {
			// A renamed segment is another segment: seg1x added, seg1
			// removed.
			if len(plan) != 2 || plan[0].Setting != "segment[seg1x]" || plan[1].Setting != "segment[seg1]" {
				t.Errorf("segment renamed: plan %+v", plan)
			}
			return
		}
		if len(plan) != 1 || plan[0].Setting != want {
			t.Errorf("%s changed: plan %+v, want one change of %s", path, plan, want)
			return
		}
		if got, sp := plan[0].Effect, settingPlans[path]; got != sp.effect || plan[0].Taker != sp.taker {
			t.Errorf("%s changed: effect %q by %q, want %q by %q", path, got, plan[0].Taker, sp.effect, sp.taker)
		}
	})
}

func TestPlanSegments(t *testing.T) {
	cur := &Config{Segments: []Segment{
		{Name: "seg1", Ports: []string{"LAN1", "LAN2"}, MTU: 1522},
		{Name: "seg2", Ports: []string{"LAN3", "LAN4"}, MTU: 1522},
	}}
	next := &Config{Segments: []Segment{
		{Name: "seg1", Ports: []string{"LAN1", "LAN2"}, MTU: 1522},
		{Name: "seg2", Ports: []string{"LAN3", "LAN4"}, MTU: 9000},
		{Name: "seg3", Ports: []string{"LAN5", "LAN6"}, MTU: 1522},
	}}
	plan := Plan(cur, next)
	var got []string
	for _, c := range plan {
		got = append(got, c.Setting+" "+strings.Join(c.Segments, ",")+": "+c.Detail)
	}
	want := []string{
		"segment[seg2] seg2: changed: mtu 1522 -> 9000",
		"segment[seg3] seg3: added: LAN5 and LAN6",
	}
	if !slices.Equal(got, want) {
		t.Errorf("plan:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	if d := Disturbs(plan); d != EffectReattach {
		t.Errorf("Disturbs = %q, want %q", d, EffectReattach)
	}
	back := Plan(next, cur)
	if len(back) != 2 || back[1].Detail != "removed: LAN5 and LAN6" {
		t.Errorf("plan back: %+v", back)
	}
	// Under the afxdp engine every segment goes through a change.
	cur.Forwarder.Engine, next.Forwarder.Engine = "afxdp", "afxdp"
	for _, c := range Plan(cur, next) {
		if !slices.Equal(c.Segments, []string{"seg1", "seg2", "seg3"}) || !strings.Contains(c.Detail, "every segment is re-attached") {
			t.Errorf("afxdp: %+v, want every segment re-attached", c)
		}
	}
}

func TestPlanNoChange(t *testing.T) {
	a, b := Default(), Default()
	b.Status.Names = []string{} // empty and absent lists are the same
	if plan := Plan(a, b); len(plan) != 0 || Disturbs(plan) != EffectNone {
		t.Errorf("plan of the same configuration: %+v", plan)
	}
	b.Hostname, b.Platform = "edge1", "iec-516p"
	plan := Plan(a, b)
	if len(plan) != 2 || Disturbs(plan) != EffectReboot || plan[1].Detail == "" {
		t.Errorf("hostname and platform: %+v, disturbs %q", plan, Disturbs(plan))
	}
}

// TestEstimate: a change that re-attaches segments the box forwards on now
// says about how long they are out of the datapath; a segment added is
// not, and neither is a change in place.
func TestEstimate(t *testing.T) {
	cur := Default()
	cur.Segments = []Segment{{Name: "seg1", Ports: []string{"LAN1", "LAN2"}}, {Name: "seg2", Ports: []string{"LAN3", "LAN4"}}}
	next := *cur
	next.Segments = []Segment{cur.Segments[0], {Name: "seg2", Ports: []string{"LAN3", "LAN4"}, MTU: 9000}, {Name: "seg3", Ports: []string{"LAN5", "LAN6"}}}
	next.Hostname = "fw2"
	plan := Plan(cur, &next)
	Estimate(cur, &next, plan, 900*time.Millisecond)
	got := map[string]Change{}
	for _, c := range plan {
		got[c.Setting] = c
	}
	if c := got["segment[seg2]"]; c.AwayMS != 900 || !strings.Contains(c.Detail, "mtu 0 -> 9000; seg2 out of the datapath for about 900 ms, its relay in bypass") {
		t.Errorf("seg2 changed: %+v", c)
	}
	if c := got["segment[seg3]"]; c.AwayMS != 0 || strings.Contains(c.Detail, "datapath") {
		t.Errorf("seg3 added: %+v, want no time out of the datapath", c)
	}
	if c := got["hostname"]; c.AwayMS != 0 || c.Detail != "" {
		t.Errorf("hostname: %+v", c)
	}
	next.Forwarder.Mode = "service"
	plan = Plan(cur, &next)
	Estimate(cur, &next, plan, 0)
	if c := plan[slices.IndexFunc(plan, func(c Change) bool { return c.Setting == "forwarder.mode" })]; c.AwayMS != 1 || !strings.Contains(c.Detail, "seg1, seg2 out of the datapath for about 1 ms") {
		t.Errorf("forwarder.mode: %+v, want seg1 and seg2 out (not seg3, added)", c)
	}
}
