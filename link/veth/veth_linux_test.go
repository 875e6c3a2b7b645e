package veth_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"ibfab/internal/testsupport/netnstest"
	"ibfab/internal/testsupport/testenv"
	"ibfab/link"
	"ibfab/link/linktest"
	"ibfab/link/veth"
	"ibfab/wire"
)

// fixture is a veth pair between two fresh namespaces, an Endpoint open on
// each end.
type fixture struct {
	nsA, nsB netns.NsHandle
	ifA, ifB string
	a, b     *veth.Endpoint
}

func ifName(x string) string { return fmt.Sprintf("%s%d%s", netnstest.Prefix, os.Getpid(), x) }

func newFixture(tb testing.TB) *fixture {
	tb.Helper()
	testenv.RequireRoot(tb)
	f := &fixture{
		nsA: netnstest.NewNS(tb, netnstest.Name("a")),
		nsB: netnstest.NewNS(tb, netnstest.Name("b")),
		ifA: ifName("a"),
		ifB: ifName("b"),
	}
	netnstest.VethPair(tb, f.nsA, f.ifA, f.nsB, f.ifB)
	f.a = open(tb, f.nsA, f.ifA)
	f.b = open(tb, f.nsB, f.ifB)
	return f
}

func open(tb testing.TB, ns netns.NsHandle, ifname string) *veth.Endpoint {
	tb.Helper()
	var ep *veth.Endpoint
	err := netnstest.Do(ns, func() (err error) {
		ep, err = veth.Open(ifname)
		return err
	})
	require.NoError(tb, err, "veth.Open(%q)", ifname)
	tb.Cleanup(func() { ep.Close() })
	return ep
}

func newPair(t *testing.T) linktest.Pair {
	f := newFixture(t)
	return linktest.Pair{A: f.a, B: f.b, SetCarrier: func(up bool) {
		require.NoError(t, netnstest.SetUp(f.nsA, f.ifA, up))
	}}
}

func TestConformance(t *testing.T) { linktest.Run(t, newPair) }

// raw is a packet socket seeing every frame an interface receives, to
// inject frames the Endpoint would never write and to look at the headers
// it writes.
type raw struct{ fd int }

func openRaw(t *testing.T, ns netns.NsHandle, ifname string) *raw {
	t.Helper()
	var r raw
	err := netnstest.Do(ns, func() error {
		l, err := netlink.LinkByName(ifname)
		if err != nil {
			return err
		}
		if r.fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL))); err != nil {
			return err
		}
		if err := unix.SetsockoptInt(r.fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1); err != nil {
			return err
		}
		// A failure deadline for reads, not a delay: frames come at once.
		tv := unix.NsecToTimeval(int64(linktest.Wait))
		if err := unix.SetsockoptTimeval(r.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
			return err
		}
		return unix.Bind(r.fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: l.Attrs().Index})
	})
	require.NoError(t, err)
	t.Cleanup(func() { unix.Close(r.fd) })
	return &r
}

func (r *raw) send(t *testing.T, frame []byte) {
	t.Helper()
	_, err := unix.Write(r.fd, frame)
	require.NoError(t, err)
}

// next returns the next IBA frame (whole, with its Ethernet header).
func (r *raw) next(t *testing.T) []byte {
	t.Helper()
	buf := make([]byte, 16<<10)
	for {
		n, err := unix.Read(r.fd, buf)
		require.NoError(t, err, "reading raw socket")
		if n >= wire.EthernetSize {
			if _, ok := link.KindOf(binary.BigEndian.Uint16(buf[12:])); ok {
				return buf[:n]
			}
		}
	}
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

func mac(hw net.HardwareAddr) (m [wire.MACSize]byte) {
	copy(m[:], hw)
	return m
}

func TestEtherTypeFilter(t *testing.T) {
	linktest.LeakCheck(t)
	f := newFixture(t)
	rb := linktest.NewRecorder(16)
	f.b.Attach(rb)
	inject := openRaw(t, f.nsA, f.ifA)
	dst, src := mac(f.b.MAC()), mac(f.a.MAC())
	ibPayload := bytes.Repeat([]byte{0xab}, 64)
	tests := []struct {
		name      string
		etherType uint16
		deliver   bool
	}{
		{"IPv4", 0x0800, false},
		{"ARP", 0x0806, false},
		{"IPv6", 0x86dd, false},
		{"data", wire.EtherTypeData, true},
		{"link", wire.EtherTypeLink, true},
		{"training", link.EtherTypeTraining, true},
		{"neighbour of training", link.EtherTypeTraining + 1, false},
		{"VLAN tag", 0x8100, false},
	}
	for _, tt := range tests {
		inject.send(t, append(wire.AppendEthernet(nil, dst, src, tt.etherType), ibPayload...))
	}
	// Frames arrive in order, so after the last one is in, everything the
	// filter let through is in too.
	marker := []byte("end")
	inject.send(t, append(wire.AppendEthernet(nil, dst, src, wire.EtherTypeData), marker...))
	for _, tt := range tests {
		if !tt.deliver {
			continue
		}
		t.Run(tt.name, func(t *testing.T) {
			k, _ := link.KindOf(tt.etherType)
			linktest.CheckPacket(t, rb.Expect(t), k, ibPayload)
		})
	}
	linktest.CheckPacket(t, rb.Expect(t), link.KindData, marker)
	assert.Equal(t, uint64(0), f.b.Stats().RxOther, "the kernel filter must stop other EtherTypes")
}

func TestEthernetHeader(t *testing.T) {
	linktest.LeakCheck(t)
	f := newFixture(t)
	ra := linktest.NewRecorder(16)
	f.a.Attach(ra)
	sniffB := openRaw(t, f.nsB, f.ifB)
	bcast := [wire.MACSize]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	pkt := bytes.Repeat([]byte{0x11}, 40)

	// Before A has heard from B it broadcasts.
	require.NoError(t, f.a.WritePacket(link.KindData, pkt))
	assertFrame(t, sniffB.next(t), bcast, mac(f.a.MAC()), wire.EtherTypeData, pkt)

	// B's frame teaches A its MAC.
	require.NoError(t, f.b.WritePacket(link.KindLink, make([]byte, wire.FlowControlSize)))
	ra.Expect(t)
	require.NoError(t, f.a.WritePacket(link.KindLink, pkt[:6]))
	assertFrame(t, sniffB.next(t), mac(f.b.MAC()), mac(f.a.MAC()), wire.EtherTypeLink, pkt[:6])
}

func assertFrame(t *testing.T, frame []byte, dst, src [wire.MACSize]byte, etherType uint16, pkt []byte) {
	t.Helper()
	want := append(wire.AppendEthernet(nil, dst, src, etherType), pkt...)
	assert.Equal(t, want, frame)
}

func TestCarrierOnDelete(t *testing.T) {
	linktest.LeakCheck(t)
	f := newFixture(t)
	ra, rb := linktest.NewRecorder(16), linktest.NewRecorder(16)
	f.a.Attach(ra)
	f.b.Attach(rb)
	h, err := netlink.NewHandleAt(f.nsB)
	require.NoError(t, err)
	defer h.Close()
	l, err := h.LinkByName(f.ifB)
	require.NoError(t, err)
	require.NoError(t, h.LinkDel(l))
	ra.ExpectCarrier(t, false)
	rb.ExpectCarrier(t, false)
	assert.ErrorIs(t, f.a.WritePacket(link.KindData, []byte{1}), link.ErrNoCarrier)
}

func TestOpenErrors(t *testing.T) {
	linktest.LeakCheck(t)
	testenv.RequireRoot(t)
	ns := netnstest.NewNS(t, netnstest.Name("e"))
	tests := []struct {
		name   string
		ifname string
	}{
		{"missing", "ibf-tnone"},
		{"empty", ""},
		{"too long", "ibf-t-a-name-far-too-long-for-linux"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := netnstest.Do(ns, func() error {
				ep, err := veth.Open(tt.ifname)
				if err == nil {
					ep.Close()
				}
				return err
			})
			assert.Error(t, err, "Open(%q)", tt.ifname)
		})
	}
}

func TestStatsCountKernelDrops(t *testing.T) {
	linktest.LeakCheck(t)
	f := newFixture(t)
	// B is never attached, so its socket buffer fills and the kernel drops.
	pkt := make([]byte, link.MaxPacketSize)
	deadline := time.Now().Add(linktest.Wait)
	for f.b.Stats().RxKernelDrops == 0 {
		require.True(t, time.Now().Before(deadline), "no kernel drop counted")
		for range 256 {
			require.NoError(t, f.a.WritePacket(link.KindData, pkt))
		}
	}
	assert.NotZero(t, f.a.Stats().TxPackets)
}

// echo writes every packet back.
type echo struct{ ep link.Endpoint }

func (e echo) DeliverPacket(k link.Kind, pkt []byte) { e.ep.WritePacket(k, pkt) }
func (e echo) CarrierChanged(bool)                   {}

// signal passes each delivery to the benchmark loop.
type signal chan struct{}

func (s signal) DeliverPacket(link.Kind, []byte) { s <- struct{}{} }
func (s signal) CarrierChanged(bool)             {}

func BenchmarkRoundTrip(b *testing.B) {
	f := newFixture(b)
	got := make(signal)
	f.a.Attach(got)
	f.b.Attach(echo{f.b})
	pkt := make([]byte, 2048+36) // 2 KiB payload, UD headers, CRCs
	b.SetBytes(int64(2 * len(pkt)))
	b.ReportAllocs()
	for b.Loop() {
		if err := f.a.WritePacket(link.KindData, pkt); err != nil {
			b.Fatal(err)
		}
		<-got
	}
}

// batchCounter signals each time another batch of packets has arrived.
type batchCounter struct {
	n, batch int
	done     chan struct{}
}

func (c *batchCounter) DeliverPacket(link.Kind, []byte) {
	if c.n++; c.n%c.batch == 0 {
		c.done <- struct{}{}
	}
}

func (c *batchCounter) CarrierChanged(bool) {}

// BenchmarkThroughput is one-way, unpaced: the machine's limit for one link.
// The writer waits for each batch to arrive before the next, so the socket
// buffer never overflows.
func BenchmarkThroughput(b *testing.B) {
	sizes := []struct {
		name string
		n    int
	}{
		{"link", wire.FlowControlSize},
		{"256B", 256 + 36},
		{"2KiB", 2048 + 36},
		{"4KiB", 4096 + 36},
	}
	for _, sz := range sizes {
		b.Run(sz.name, func(b *testing.B) {
			f := newFixture(b)
			const batch = 256
			c := &batchCounter{batch: batch, done: make(chan struct{})}
			f.b.Attach(c)
			pkt := make([]byte, sz.n)
			b.SetBytes(int64(len(pkt)))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if err := f.a.WritePacket(link.KindData, pkt); err != nil {
					b.Fatal(err)
				}
				if i++; i%batch == 0 {
					<-c.done
				}
			}
			b.StopTimer()
			if s := f.b.Stats(); s.RxKernelDrops != 0 {
				b.Errorf("%d kernel drops", s.RxKernelDrops)
			}
		})
	}
}

// TestTransmitter turns one end's transmitter off and on: both ends lose
// the carrier and get it back, the dark end's socket works again after,
// and a reopened endpoint starts with its transmitter on.
func TestTransmitter(t *testing.T) {
	linktest.LeakCheck(t)
	f := newFixture(t)
	ra, rb := linktest.NewRecorder(16), linktest.NewRecorder(16)
	f.a.Attach(ra)
	f.b.Attach(rb)
	require.NoError(t, f.a.SetTransmitter(false))
	ra.ExpectCarrier(t, false)
	rb.ExpectCarrier(t, false)
	assert.ErrorIs(t, f.b.WritePacket(link.KindData, []byte{1}), link.ErrNoCarrier)
	require.NoError(t, f.a.SetTransmitter(true))
	ra.ExpectCarrier(t, true)
	rb.ExpectCarrier(t, true)
	require.NoError(t, f.b.WritePacket(link.KindData, []byte{2}))
	assert.Equal(t, []byte{2}, ra.Expect(t).Data[:1])
	assert.Equal(t, uint64(0), f.a.Stats().RxErrors, "going dark is no read error")

	// Dark when its port closes, the interface comes back on with the next.
	require.NoError(t, f.a.SetTransmitter(false))
	rb.ExpectCarrier(t, false)
	require.NoError(t, f.a.Close())
	open(t, f.nsA, f.ifA)
	rb.ExpectCarrier(t, true)
}
