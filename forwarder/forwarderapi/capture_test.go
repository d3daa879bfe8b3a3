package forwarderapi

import (
	"net/url"
	"strings"
	"testing"
)

func TestParseCaptureRequest(t *testing.T) {
	got, err := ParseCaptureRequest(url.Values{"port": {"LAN1"}})
	want := CaptureRequest{Port: "LAN1", Direction: CaptureIn, Seconds: CaptureDefaultSeconds, Snaplen: CaptureMaxSnaplen}
	if err != nil || got != want {
		t.Errorf("defaults: %+v, %v; want %+v", got, err, want)
	}
	full := CaptureRequest{Port: "LAN3", Direction: CaptureBoth, Filter: "vlan 42", Seconds: 9, Frames: 100, Snaplen: 96}
	if got, err := ParseCaptureRequest(full.Query()); err != nil || got != full {
		t.Errorf("round trip: %+v, %v; want %+v", got, err, full)
	}
	for q, says := range map[string]string{
		"":                       "port is missing",
		"port=LAN1&direction=up": `direction "up"`,
		"port=LAN1&seconds=0":    "seconds",
		"port=LAN1&seconds=3601": "seconds",
		"port=LAN1&frames=-1":    "frames",
		"port=LAN1&snaplen=13":   "snaplen",
		"port=LAN1&snaplen=x":    "snaplen",
		"port=LAN1&port=LAN2":    "port given 2 times",
		"port=LAN1&verbose=1":    `unknown parameter "verbose"`,
		"port=LAN1&filter=" + strings.Repeat("x", CaptureMaxFilter+1): "filter of 1025 bytes",
	} {
		v, _ := url.ParseQuery(q)
		_, err := ParseCaptureRequest(v)
		ce, ok := AsCaptureError(err)
		if !ok || ce.Kind != CaptureBadRequest || !strings.Contains(ce.Message, says) || ce.HTTPStatus() != 400 {
			t.Errorf("%q: got %v, want a bad request saying %q", q, err, says)
		}
	}
}
