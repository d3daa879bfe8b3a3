package forwarder_test

import (
	"testing"

	"github.com/ncpos/ncpos/forwarder"
	"github.com/ncpos/ncpos/internal/testenv"
)

func requireRoot(t testing.TB) {
	t.Helper()
	testenv.NeedRoot(t, testenv.Lab, "BPF")
}

// TestBPFParserMatchesGo runs the kernel's parser (port_service under
// BPF_PROG_RUN) and ParseFrame on the same frames, valid, broken and
// mutated, and wants the same malformations and the same flow key, so that
// both engines count alike.
func TestBPFParserMatchesGo(t *testing.T) {
	requireRoot(t)
	pt, err := forwarder.NewProgramTester()
	if err != nil {
		t.Fatal(err)
	}
	defer pt.Close()
	frames := append(seedFrames(), mutate(seedFrames(), 3000)...)
	var keyed, malformed int
	defer func() {
		t.Logf("%d frames: %d with a flow key, %d malformed", len(frames), keyed, malformed)
		if keyed < 100 || malformed < 100 {
			t.Errorf("the mutated frames exercise too little of the parser")
		}
	}()
	for i, f := range frames {
		got, err := pt.Run(f)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		want := forwarder.ParseFrame(f)
		if got.HasKey {
			keyed++
		}
		if got.Malformed != 0 {
			malformed++
		}
		if got.Malformed != want.Malformed || got.HasKey != want.HasKey || (want.HasKey && (got.Key != want.Key || got.TCPFlags != want.TCPFlags)) {
			t.Errorf("frame %d %x:\n BPF %v key=%v %+v flags=%#x\n  Go %v key=%v %+v flags=%#x", i, f,
				reasons(got.Malformed), got.HasKey, got.Key, got.TCPFlags,
				reasons(want.Malformed), want.HasKey, want.Key, want.TCPFlags)
		}
	}
}
