package port_test

import (
	"testing"

	"ibfab/port"
	"ibfab/port/porttest"
	"ibfab/wire/mad"
)

func TestDropLogWrapsAndFilters(t *testing.T) {
	l := port.NewDropLog(4)
	if got := l.Size(); got != 4 {
		t.Fatalf("Size() = %d, want 4", got)
	}
	for i := range 6 {
		l.Record(port.DropRecord{At: int64(10 * (i + 1)), DLID: uint16(i + 1), Cause: port.DropUnroutable})
	}
	got, n := l.Since(0, nil)
	if n != 6 {
		t.Errorf("written = %d, want 6", n)
	}
	// The ring keeps the last four, oldest first.
	var dl []uint16
	for _, r := range got {
		dl = append(dl, r.DLID)
	}
	if want := []uint16{3, 4, 5, 6}; !equalU16(dl, want) {
		t.Errorf("kept DLIDs %v, want %v", dl, want)
	}
	got, _ = l.Since(50, nil)
	if len(got) != 2 || got[0].At != 50 || got[1].At != 60 {
		t.Errorf("Since(50) = %+v, want the records at 50 and 60", got)
	}
	if got, _ := l.Since(61, nil); len(got) != 0 {
		t.Errorf("Since(61) = %+v, want none", got)
	}
	var nilLog *port.DropLog
	nilLog.Record(port.DropRecord{})
	if got, n := nilLog.Since(0, nil); len(got) != 0 || n != 0 {
		t.Errorf("nil log: %v %d", got, n)
	}
}

func TestDropLogRecordAllocatesNothing(t *testing.T) {
	l := port.NewDropLog(16)
	r := port.DropRecord{At: 1, SLID: 2, DLID: 3, Port: 4, Cause: port.DropLinkDown, VL: 1, SL: 1, Sending: true}
	if a := testing.AllocsPerRun(1000, func() { l.Record(r) }); a != 0 {
		t.Errorf("Record allocates %v times per call, want 0", a)
	}
	// Nor does a port's drop: a refused Send on a port that is Down.
	e := newEnv(t, port.Config{DropLog: l, Num: 7}, nil)
	pkt := porttest.UD(0, 9, 100, 0)
	p := port.NewPacket(pkt)
	if a := testing.AllocsPerRun(100, func() {
		p.Bytes = pkt
		e.a.CountXmitDropPacket(port.DropNotActive, p.Bytes)
	}); a != 0 {
		t.Errorf("CountXmitDropPacket allocates %v times per call, want 0", a)
	}
}

func TestPortDropsAreLogged(t *testing.T) {
	l := port.NewDropLog(1024)
	e := newEnv(t, port.Config{DropLog: l, Num: 3}, nil)
	// Before training a data packet is refused: not active, on the send
	// side, with the packet's LRH.
	if err := e.a.Send(port.NewPacket(porttest.UD(0, 0x21, 100, 0))); err == nil {
		t.Fatal("Send before training succeeded")
	}
	// An SMP on VL15 is not recorded, whatever happens to it.
	_ = e.a.Send(port.NewPacket(porttest.SMP(0x22, 0)))
	// Packets queued behind a full buffer go when the port is set Down.
	e.activate(t)
	e.rb.setHold(true)
	for i := range 100 {
		send(t, e.a, porttest.UD(0, 0x23, 2000, byte(i)))
	}
	blocks := port.Blocks(porttest.UDSize(2000))
	e.run(t, func() bool { return e.a.Credits(0).Available < blocks })
	queued := e.a.Credits(0).Queued
	if err := e.a.SetState(mad.PortStateDown); err != nil {
		t.Fatalf("SetState(Down): %v", err)
	}
	got, _ := l.Since(0, nil)
	if len(got) != 1+queued {
		t.Fatalf("%d records, want %d: %+v", len(got), 1+queued, got)
	}
	first := got[0]
	want := port.DropRecord{At: first.At, SLID: 1, DLID: 0x21, Port: 3, Cause: port.DropNotActive, Sending: true}
	if first != want {
		t.Errorf("refused: %+v, want %+v", first, want)
	}
	for _, r := range got[1:] {
		if r.Cause != port.DropLinkDown || r.DLID != 0x23 || r.SLID != 1 || !r.Sending || r.Port != 3 {
			t.Errorf("flushed: %+v, want link down while queued from 1 to 0x23 at port 3", r)
		}
	}
	e.rb.release(-1)
}

func equalU16(a, b []uint16) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
