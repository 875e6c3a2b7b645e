package linktest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"testing"

	"ibfab/link"
	"ibfab/wire"
)

// Pair is two endpoints on one link, as a conformance subtest gets them.
type Pair struct {
	A, B link.Endpoint
	// SetCarrier takes the medium down or up, as pulling a cable would;
	// nil if the medium has no such control (the carrier tests are then
	// left out).
	SetCarrier func(up bool)
}

// minFrame is the shortest Ethernet payload; media may pad shorter packets
// up to it.
const minFrame = 46

// Run runs the conformance suite of link.Endpoint on pairs made by newPair,
// one per subtest. newPair registers the pair's teardown with t.Cleanup;
// the suite closes the endpoints itself too where it needs to.
func Run(t *testing.T, newPair func(t *testing.T) Pair) {
	t.Run("exchange", func(t *testing.T) { testExchange(t, newPair) })
	t.Run("order", func(t *testing.T) { testOrder(t, newPair) })
	t.Run("before attach", func(t *testing.T) { testBeforeAttach(t, newPair) })
	t.Run("bad writes", func(t *testing.T) { testBadWrites(t, newPair) })
	t.Run("carrier", func(t *testing.T) { testCarrier(t, newPair) })
	t.Run("close", func(t *testing.T) { testClose(t, newPair) })
}

// attached returns p with a Recorder attached to each end.
func attached(t *testing.T, newPair func(t *testing.T) Pair) (Pair, *Recorder, *Recorder) {
	LeakCheck(t)
	p := newPair(t)
	ra, rb := NewRecorder(256), NewRecorder(256)
	p.A.Attach(ra)
	p.B.Attach(rb)
	return p, ra, rb
}

// payload returns n bytes that differ per seed, so a packet delivered in
// the wrong place is noticed.
func payload(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7)
	}
	return b
}

// CheckPacket fails t unless got is pkt of kind k, allowing for the padding
// a medium may add to packets shorter than the Ethernet minimum.
func CheckPacket(t testing.TB, got Packet, k link.Kind, pkt []byte) {
	t.Helper()
	if got.Kind != k {
		t.Errorf("kind = %v, want %v", got.Kind, k)
	}
	if !bytes.HasPrefix(got.Data, pkt) || len(got.Data) > max(len(pkt), minFrame) {
		t.Errorf("packet = %d bytes %x..., want %d bytes %x...", len(got.Data), head(got.Data), len(pkt), head(pkt))
	}
}

func head(b []byte) []byte { return b[:min(len(b), 16)] }

func testExchange(t *testing.T, newPair func(t *testing.T) Pair) {
	p, ra, rb := attached(t, newPair)
	if p.A.Name() == "" || p.B.Name() == "" {
		t.Errorf("Name() = %q, %q; want non-empty", p.A.Name(), p.B.Name())
	}
	fc := wire.AppendFlowControl(nil, &wire.FlowControlFields{VL: 3, FCTBS: 100, FCCL: 200})
	tests := []struct {
		name string
		kind link.Kind
		pkt  []byte
	}{
		{"link packet", link.KindLink, fc},
		{"small data", link.KindData, payload(28, 1)},
		{"2 KiB data", link.KindData, payload(2048+36, 2)},
		{"largest data", link.KindData, payload(link.MaxPacketSize, 3)},
		{"one byte", link.KindData, []byte{0x5a}},
	}
	for _, tt := range tests {
		for _, dir := range []struct {
			name     string
			from     link.Endpoint
			to       *Recorder
			reversed bool
		}{{"a to b", p.A, rb, false}, {"b to a", p.B, ra, true}} {
			t.Run(tt.name+" "+dir.name, func(t *testing.T) {
				if err := dir.from.WritePacket(tt.kind, tt.pkt); err != nil {
					t.Fatalf("WritePacket(%v, %d bytes) = %v", tt.kind, len(tt.pkt), err)
				}
				CheckPacket(t, dir.to.Expect(t), tt.kind, tt.pkt)
			})
		}
	}
}

func testOrder(t *testing.T, newPair func(t *testing.T) Pair) {
	p, _, rb := attached(t, newPair)
	const n = 64
	for i := range n {
		pkt := payload(60, byte(i))
		binary.BigEndian.PutUint32(pkt, uint32(i))
		k := link.KindData
		if i%3 == 0 {
			k = link.KindLink
		}
		if err := p.A.WritePacket(k, pkt); err != nil {
			t.Fatalf("WritePacket #%d = %v", i, err)
		}
	}
	for i := range n {
		got := rb.Expect(t)
		if seq := binary.BigEndian.Uint32(got.Data); seq != uint32(i) {
			t.Fatalf("packet #%d has sequence %d: reordered or lost", i, seq)
		}
	}
}

func testBeforeAttach(t *testing.T, newPair func(t *testing.T) Pair) {
	LeakCheck(t)
	p := newPair(t)
	pkt := payload(100, 9)
	if err := p.A.WritePacket(link.KindData, pkt); err != nil {
		t.Fatalf("WritePacket before the peer's Attach = %v", err)
	}
	rb := NewRecorder(4)
	p.B.Attach(rb)
	CheckPacket(t, rb.Expect(t), link.KindData, pkt)
	p.B.Attach(NewRecorder(4)) // ignored
	pkt2 := payload(100, 10)
	if err := p.A.WritePacket(link.KindData, pkt2); err != nil {
		t.Fatalf("WritePacket = %v", err)
	}
	CheckPacket(t, rb.Expect(t), link.KindData, pkt2)
}

func testBadWrites(t *testing.T, newPair func(t *testing.T) Pair) {
	p, _, rb := attached(t, newPair)
	tests := []struct {
		name string
		kind link.Kind
		n    int
		want error
	}{
		{"kind zero", 0, 10, link.ErrKind},
		{"kind nine", 9, 10, link.ErrKind},
		{"empty data", link.KindData, 0, link.ErrSize},
		{"empty link", link.KindLink, 0, link.ErrSize},
		{"too long", link.KindData, link.MaxPacketSize + 1, link.ErrSize},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := p.A.WritePacket(tt.kind, make([]byte, tt.n)); !errors.Is(err, tt.want) {
				t.Errorf("WritePacket(%v, %d bytes) = %v, want %v", tt.kind, tt.n, err, tt.want)
			}
		})
	}
	// Nothing of that may have gone out: the next packet is the first.
	pkt := payload(64, 11)
	if err := p.A.WritePacket(link.KindData, pkt); err != nil {
		t.Fatalf("WritePacket = %v", err)
	}
	CheckPacket(t, rb.Expect(t), link.KindData, pkt)
}

func testCarrier(t *testing.T, newPair func(t *testing.T) Pair) {
	p, ra, rb := attached(t, newPair)
	if p.SetCarrier == nil {
		t.Log("medium has no carrier control")
		return
	}
	if !p.A.Carrier() || !p.B.Carrier() {
		t.Fatalf("Carrier() = %v, %v at start, want up", p.A.Carrier(), p.B.Carrier())
	}
	p.SetCarrier(false)
	ra.ExpectCarrier(t, false)
	rb.ExpectCarrier(t, false)
	if p.A.Carrier() || p.B.Carrier() {
		t.Errorf("Carrier() = %v, %v after down, want false", p.A.Carrier(), p.B.Carrier())
	}
	if err := p.A.WritePacket(link.KindData, payload(64, 12)); !errors.Is(err, link.ErrNoCarrier) {
		t.Errorf("WritePacket without carrier = %v, want %v", err, link.ErrNoCarrier)
	}
	p.SetCarrier(true)
	ra.ExpectCarrier(t, true)
	rb.ExpectCarrier(t, true)
	if !p.A.Carrier() || !p.B.Carrier() {
		t.Errorf("Carrier() = %v, %v after up, want true", p.A.Carrier(), p.B.Carrier())
	}
	pkt := payload(64, 13)
	if err := p.B.WritePacket(link.KindData, pkt); err != nil {
		t.Fatalf("WritePacket after carrier up = %v", err)
	}
	CheckPacket(t, ra.Expect(t), link.KindData, pkt)
}

func testClose(t *testing.T, newPair func(t *testing.T) Pair) {
	p, _, _ := attached(t, newPair)
	// A is attached, so its receive side is blocked waiting: Close must
	// unblock it and return.
	if err := p.A.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	if err := p.A.Close(); err != nil {
		t.Errorf("second Close() = %v, want nil", err)
	}
	if err := p.A.WritePacket(link.KindData, payload(64, 14)); !errors.Is(err, net.ErrClosed) {
		t.Errorf("WritePacket after Close = %v, want net.ErrClosed", err)
	}
	// The survivor's packets are lost, not refused: the medium cannot tell
	// that nobody listens at the other end.
	if err := p.B.WritePacket(link.KindData, payload(64, 15)); err != nil {
		t.Errorf("WritePacket toward a closed end = %v, want nil", err)
	}
	p.A.Attach(NewRecorder(1)) // ignored after Close
	if err := p.B.Close(); err != nil {
		t.Errorf("Close() = %v", err)
	}
}
