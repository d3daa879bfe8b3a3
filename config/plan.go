package config

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"
)

// Effect is what taking a changed setting does to the box.
type Effect string

// The effects a change can have, from none to a reboot.
const (
	// EffectNone: no daemon's behaviour towards traffic changes (the
	// self-test's plan, which runs only when asked).
	EffectNone Effect = "none"
	// EffectInPlace: a daemon takes it without a restart; no segment is
	// touched.
	EffectInPlace Effect = "in place"
	// EffectReattach: the segments named are detached and attached
	// again, each relay in bypass meanwhile (a new segment is attached,
	// a removed one detached).
	EffectReattach Effect = "re-attach"
	// EffectReboot: the box takes it only when it boots.
	EffectReboot Effect = "reboot"
)

// rank orders effects by how much they disturb.
func (e Effect) rank() int {
	return slices.Index([]Effect{EffectNone, EffectInPlace, EffectReattach, EffectReboot}, e)
}

// Who takes a setting in place.
const (
	TakerInit      = "init" // the box itself: its hostname
	TakerForwarder = "forwarderd"
	TakerBypass    = "bypassd"
	TakerWatchdog  = "watchdogd"
	TakerStatus    = "statusd"
)

// settingPlan is how one setting takes effect.
type settingPlan struct {
	effect Effect
	taker  string // for EffectInPlace (and the daemon that re-attaches)
	why    string // what only a boot can do, or what an operator should know
}

// moveAddress is the detail of a change to the management address.
const moveAddress = "the management address moves: confirm over the new one, or the change reverts by itself"

// settingPlans says, for every setting of the schema, how a change to it
// takes effect. Settings inside [[array]] tables are named without
// indices (segment.mtu). TestPlanCoversEverySetting fails for a setting
// the schema has and this table lacks.
var settingPlans = map[string]settingPlan{
	"hostname": {EffectInPlace, TakerInit, ""},
	"platform": {EffectReboot, "", "the platform profile names the ports, the watchdog and the bypass hardware the daemons were started on"},
	"services": {EffectReboot, "", "init starts and supervises the daemons once per boot"},

	"management.port": {EffectReboot, "", "the management port is chosen and quieted as a data port's opposite at boot"},
	// Init moves the management address in place; the address given up
	// answers a few seconds more, then a host that cannot reach the new
	// one is cut off until the change reverts by itself.
	"management.dhcp":     {EffectInPlace, TakerInit, moveAddress},
	"management.address":  {EffectInPlace, TakerInit, moveAddress},
	"management.gateway":  {EffectInPlace, TakerInit, moveAddress},
	"management.ipv6":     {EffectInPlace, TakerInit, moveAddress},
	"management.address6": {EffectInPlace, TakerInit, moveAddress},
	"management.gateway6": {EffectInPlace, TakerInit, moveAddress},
	"management.dns":      {EffectInPlace, TakerInit, ""},

	"status.port":          {EffectReboot, "", "statusd listens on the ports init gives it at boot"},
	"status.http_port":     {EffectReboot, "", "statusd listens on the ports init gives it at boot"},
	"status.auth_read":     {EffectInPlace, TakerStatus, ""},
	"status.password":      {EffectInPlace, TakerStatus, ""},
	"status.password_hash": {EffectInPlace, TakerStatus, ""},
	"status.names":         {EffectInPlace, TakerStatus, ""},

	"watchdog.device":     {EffectReboot, "", "the watchdog device, once opened, cannot be handed over without a reset of the box"},
	"watchdog.timeout":    {EffectInPlace, TakerWatchdog, ""},
	"watchdog.interval":   {EffectInPlace, TakerWatchdog, ""},
	"watchdog.boot_grace": {EffectInPlace, TakerWatchdog, ""},

	// The engine, its mode and cores apply to every segment's programs
	// and maps: every segment is re-attached.
	"forwarder.engine":          {EffectReattach, TakerForwarder, ""},
	"forwarder.mode":            {EffectReattach, TakerForwarder, ""},
	"forwarder.cores":           {EffectReattach, TakerForwarder, ""},
	"forwarder.flow_table_size": {EffectReattach, TakerForwarder, ""},
	"forwarder.flow_control":    {EffectReattach, TakerForwarder, ""},
	"forwarder.xdp_mode":        {EffectReattach, TakerForwarder, ""},

	"bypass.budget":          {EffectInPlace, TakerBypass, ""},
	"bypass.hold_down":       {EffectInPlace, TakerBypass, ""},
	"bypass.start_hold_down": {EffectInPlace, TakerBypass, ""},

	// A segment's settings touch that segment alone.
	"segment.name":   {EffectReattach, TakerForwarder, ""},
	"segment.ports":  {EffectReattach, TakerForwarder, ""},
	"segment.bypass": {EffectReattach, TakerForwarder, ""},
	"segment.mtu":    {EffectReattach, TakerForwarder, ""},

	"syslog.target": {EffectInPlace, TakerStatus, ""},
	"time.servers":  {EffectInPlace, TakerStatus, ""},
	"syslog.ca":     {EffectInPlace, TakerStatus, ""},

	"auth.radius.server":  {EffectInPlace, TakerStatus, ""},
	"auth.radius.secret":  {EffectInPlace, TakerStatus, ""},
	"auth.radius_timeout": {EffectInPlace, TakerStatus, ""},
	"auth.radius_retries": {EffectInPlace, TakerStatus, ""},
	"auth.admin_class":    {EffectInPlace, TakerStatus, ""},
	"auth.operator_class": {EffectInPlace, TakerStatus, ""},
	"auth.viewer_class":   {EffectInPlace, TakerStatus, ""},

	"snmp.port":           {EffectInPlace, TakerStatus, ""},
	"snmp.community":      {EffectInPlace, TakerStatus, ""},
	"snmp.location":       {EffectInPlace, TakerStatus, ""},
	"snmp.contact":        {EffectInPlace, TakerStatus, ""},
	"snmp.user.name":      {EffectInPlace, TakerStatus, ""},
	"snmp.user.auth":      {EffectInPlace, TakerStatus, ""},
	"snmp.user.auth_key":  {EffectInPlace, TakerStatus, ""},
	"snmp.user.priv":      {EffectInPlace, TakerStatus, ""},
	"snmp.user.priv_key":  {EffectInPlace, TakerStatus, ""},
	"snmp.trap.target":    {EffectInPlace, TakerStatus, ""},
	"snmp.trap.community": {EffectInPlace, TakerStatus, ""},
	"snmp.trap.user":      {EffectInPlace, TakerStatus, ""},

	"selftest.ports.test":         {EffectNone, TakerStatus, ""},
	"selftest.ports.segment_port": {EffectNone, TakerStatus, ""},
	"selftest.sizes":              {EffectNone, TakerStatus, ""},
	"selftest.trial":              {EffectNone, TakerStatus, ""},
	"selftest.line_rate":          {EffectNone, TakerStatus, ""},
	"selftest.expect":             {EffectNone, TakerStatus, ""},
	"selftest.latency_trials":     {EffectNone, TakerStatus, ""},
	"selftest.directions":         {EffectNone, TakerStatus, ""},
}

// Change is one entry of a plan: a setting (or a segment) that differs,
// and what taking it does.
type Change struct {
	// Setting is the setting's path (snmp.community, selftest.ports), or
	// segment[NAME] for a segment added, removed or changed.
	Setting string `json:"setting"`
	Effect  Effect `json:"effect"`
	// Taker is the daemon (or init) that takes it; "" for a reboot.
	Taker string `json:"taker,omitempty"`
	// Segments are the segments re-attached.
	Segments []string `json:"segments,omitempty"`
	// AwayMS is about how long the segments named that forward now are
	// out of the datapath while they are re-attached (Estimate), their
	// relays in bypass meanwhile; 0 when none of them forwards now.
	AwayMS int `json:"away_ms,omitempty"`
	// Detail says what changes: the fields of a segment, a segment
	// added or removed, what only a boot can do.
	Detail string `json:"detail,omitempty"`
}

// Plan lists what taking next in place of cur does, one Change per
// setting that differs, in the schema's order, then one per segment
// added, changed or removed (matched by name). Both must be valid configurations. An empty plan
// means the two configurations are the same.
func Plan(cur, next *Config) []Change {
	var plan []Change
	cv, nv := reflect.ValueOf(cur).Elem(), reflect.ValueOf(next).Elem()
	forEachSetting(reflect.TypeFor[Config](), "", func(path string, index []int) {
		if strings.HasPrefix(path, "segment.") {
			return
		}
		a, b := fieldAt(cv, index), fieldAt(nv, index)
		if reflect.DeepEqual(a.Interface(), b.Interface()) || (isEmpty(a) && isEmpty(b)) {
			return
		}
		// Settings inside a list (snmp.user.name) change as the list.
		setting := path
		if i := settingList(path); i != "" {
			setting = i
			if n := len(plan); n > 0 && plan[n-1].Setting == setting {
				return
			}
		}
		sp := settingPlans[path]
		c := Change{Setting: setting, Effect: sp.effect, Taker: sp.taker, Detail: sp.why}
		if sp.effect == EffectReattach {
			for _, s := range next.Segments {
				c.Segments = append(c.Segments, s.Name)
			}
			c.Detail = "every segment: the forwarder's programs and maps are made anew"
		}
		plan = append(plan, c)
	})
	segs := segmentChanges(cur.Segments, next.Segments)
	if cur.Forwarder.Engine == "afxdp" {
		// Its sockets and workers are made once for all segments.
		for i := range segs {
			segs[i].Segments = nil
			for _, s := range next.Segments {
				segs[i].Segments = append(segs[i].Segments, s.Name)
			}
			segs[i].Detail += "; the afxdp engine takes segments only as it starts: every segment is re-attached"
		}
	}
	return append(plan, segs...)
}

// Estimate says, of each change that re-attaches segments of cur that
// next keeps, about how long they are out of the datapath: reattach, what a re-attach took
// on this box. A relay takes their traffic meanwhile (held in bypass);
// a segment without one loses it.
func Estimate(cur, next *Config, changes []Change, reattach time.Duration) {
	ms := max(1, int(reattach.Milliseconds()))
	for i := range changes {
		c := &changes[i]
		if c.Effect != EffectReattach {
			continue
		}
		var away []string
		for _, name := range c.Segments {
			named := func(s Segment) bool { return s.Name == name }
			// One added has no traffic yet; one removed stays out.
			if slices.ContainsFunc(cur.Segments, named) && slices.ContainsFunc(next.Segments, named) {
				away = append(away, name)
			}
		}
		if len(away) == 0 {
			continue
		}
		c.AwayMS = ms
		note := fmt.Sprintf("%s out of the datapath for about %d ms, its relay in bypass meanwhile (without a relay, its traffic stops)", strings.Join(away, ", "), ms)
		if c.Detail != "" {
			note = c.Detail + "; " + note
		}
		c.Detail = note
	}
}

// segmentChanges compares the segments by name.
func segmentChanges(cur, next []Segment) []Change {
	var plan []Change
	old := map[string]Segment{}
	for _, s := range cur {
		old[s.Name] = s
	}
	seen := map[string]bool{}
	for _, s := range next {
		seen[s.Name] = true
		c := Change{Setting: "segment[" + s.Name + "]", Effect: EffectReattach, Taker: TakerForwarder, Segments: []string{s.Name}}
		o, ok := old[s.Name]
		switch {
		case !ok:
			c.Detail = fmt.Sprintf("added: %s", strings.Join(s.Ports, " and "))
		case reflect.DeepEqual(o, s):
			continue
		default:
			c.Detail = "changed: " + strings.Join(segmentDiff(o, s), ", ")
		}
		plan = append(plan, c)
	}
	for _, s := range cur {
		if !seen[s.Name] {
			plan = append(plan, Change{Setting: "segment[" + s.Name + "]", Effect: EffectReattach, Taker: TakerForwarder,
				Segments: []string{s.Name}, Detail: fmt.Sprintf("removed: %s", strings.Join(s.Ports, " and "))})
		}
	}
	return plan
}

// segmentDiff names the fields of a segment that differ, old -> new.
func segmentDiff(a, b Segment) []string {
	var out []string
	av, bv := reflect.ValueOf(a), reflect.ValueOf(b)
	for i := range av.NumField() {
		if key := fieldKey(av.Type().Field(i)); key != "" && !reflect.DeepEqual(av.Field(i).Interface(), bv.Field(i).Interface()) {
			out = append(out, fmt.Sprintf("%s %v -> %v", key, av.Field(i).Interface(), bv.Field(i).Interface()))
		}
	}
	return out
}

// Disturbs is the plan's greatest effect: EffectNone for an empty plan.
func Disturbs(plan []Change) Effect {
	e := EffectNone
	for _, c := range plan {
		if c.Effect.rank() > e.rank() {
			e = c.Effect
		}
	}
	return e
}

// forEachSetting calls fn with the path and field index of every setting
// of t: struct fields are descended into, and so are the elements of
// lists of tables (snmp.user.name, whose index stops at the list);
// everything else is a setting.
func forEachSetting(t reflect.Type, prefix string, fn func(path string, index []int)) {
	forEachSettingAt(t, prefix, nil, fn)
}

func forEachSettingAt(t reflect.Type, prefix string, index []int, fn func(string, []int)) {
	for i := range t.NumField() {
		f := t.Field(i)
		key := fieldKey(f)
		if key == "" {
			continue
		}
		path := joinPath(prefix, key)
		at := append(slices.Clone(index), i)
		switch st := structType(f.Type); {
		case st != nil && f.Type.Kind() == reflect.Slice:
			// The list is the setting; its element's keys name it.
			forEachSettingAt(st, path, at, func(p string, _ []int) { fn(p, at) })
		case st != nil:
			forEachSettingAt(st, path, at, fn)
		default:
			fn(path, at)
		}
	}
}

// settingList returns the list of tables a setting lies in
// (snmp.user for snmp.user.name), or "".
func settingList(path string) string {
	t := reflect.TypeFor[Config]()
	prefix := ""
	for _, key := range strings.Split(path, ".") {
		f, ok := fieldByKey(t, key)
		if !ok {
			return ""
		}
		prefix = joinPath(prefix, key)
		if f.Type.Kind() == reflect.Slice && structType(f.Type) != nil {
			return prefix
		}
		if t = structType(f.Type); t == nil {
			return ""
		}
	}
	return ""
}

func fieldAt(v reflect.Value, index []int) reflect.Value {
	for _, i := range index {
		v = v.Field(i)
	}
	return v
}

// isEmpty treats a nil and an empty list or table as the same.
func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Slice, reflect.Map:
		return v.Len() == 0
	}
	return false
}
