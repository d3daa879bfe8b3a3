package config

import (
	"testing"
	"time"
)

func TestDurationText(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		out     string
		wantErr bool
	}{
		{in: "30s", want: 30 * time.Second, out: "30s"},
		{in: "2m", want: 2 * time.Minute, out: "120s"},
		{in: "1m30s", want: 90 * time.Second, out: "90s"},
		{in: "1.5s", want: 1500 * time.Millisecond, out: "1.5s"},
		{in: "250ms", want: 250 * time.Millisecond, out: "250ms"},
		{in: "0s", want: 0, out: "0s"},
		{in: "-5s", want: -5 * time.Second, out: "-5s"},
		{in: "30", wantErr: true},
		{in: "", wantErr: true},
		{in: "5x", wantErr: true},
	}
	for _, tt := range tests {
		var d Duration
		err := d.UnmarshalText([]byte(tt.in))
		if tt.wantErr {
			if err == nil {
				t.Errorf("UnmarshalText(%q) = %v, want error", tt.in, d)
			}
			continue
		}
		if err != nil || d.Duration != tt.want {
			t.Errorf("UnmarshalText(%q) = %v, %v; want %v", tt.in, d.Duration, err, tt.want)
			continue
		}
		b, err := d.MarshalText()
		if err != nil || string(b) != tt.out {
			t.Errorf("MarshalText(%v) = %q, %v; want %q", tt.want, b, err, tt.out)
		}
	}
}
