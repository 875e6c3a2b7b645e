package hca

import (
	"testing"
	"time"
)

// TestGapEndLatency: the record of a sender's longest gap keeps how long
// the packet that ended it was on its way (0 for one without a stamp),
// and a reset clears it with the gap.
func TestGapEndLatency(t *testing.T) {
	s := &portStats{hist: newHistogram()}
	t0 := time.Unix(1000, 0)
	stamped := func(sent time.Time) []byte {
		b := make([]byte, 64)
		putStamp(b, sent.UnixNano())
		return b
	}
	s.receive(t0, rxPacket{slid: 1, payload: stamped(t0)}, 0)
	// 5 ms later the next arrives, sent 3 ms before: late, not lost.
	at := t0.Add(5 * time.Millisecond)
	s.receive(at, rxPacket{slid: 1, payload: stamped(at.Add(-3 * time.Millisecond))}, 0)
	src := s.from[1]
	if src.Gap != int64(5*time.Millisecond) || src.GapEndLatency != int64(3*time.Millisecond) {
		t.Fatalf("gap %v ending after %v on its way, want 5ms and 3ms", time.Duration(src.Gap), time.Duration(src.GapEndLatency))
	}
	// A longer gap ended by an unstamped packet: no latency known.
	s.receive(at.Add(10*time.Millisecond), rxPacket{slid: 1, payload: make([]byte, 64)}, 0)
	if src.Gap != int64(10*time.Millisecond) || src.GapEndLatency != 0 {
		t.Fatalf("gap %v latency %v, want 10ms and 0", time.Duration(src.Gap), time.Duration(src.GapEndLatency))
	}
}
