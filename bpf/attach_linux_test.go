package bpf_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"ibfab/bpf"
	"ibfab/internal/testsupport/netnstest"
	"ibfab/internal/testsupport/testenv"
	"ibfab/wire"
	"ibfab/wire/mad"
)

// pair is a veth pair between two namespaces: frames written on a's end
// are read on b's.
type pair struct {
	nsA, nsB       netns.NsHandle
	ifA, ifB       string
	indexA, indexB int
	pinDir         string
}

func newPair(t *testing.T) *pair {
	t.Helper()
	testenv.RequireRoot(t)
	require.NoError(t, bpf.MountFS())
	p := &pair{
		nsA: netnstest.NewNS(t, netnstest.Name("a")),
		nsB: netnstest.NewNS(t, netnstest.Name("b")),
		ifA: fmt.Sprintf("%s%da", netnstest.Prefix, os.Getpid()%100000),
		ifB: fmt.Sprintf("%s%db", netnstest.Prefix, os.Getpid()%100000),
	}
	netnstest.VethPair(t, p.nsA, p.ifA, p.nsB, p.ifB)
	p.indexA = ifindex(t, p.nsA, p.ifA)
	p.indexB = ifindex(t, p.nsB, p.ifB)
	p.pinDir = filepath.Join(bpf.FSRoot, netnstest.Name("pins"))
	t.Cleanup(func() { assert.NoError(t, os.RemoveAll(p.pinDir)) })
	return p
}

func ifindex(t *testing.T, ns netns.NsHandle, name string) int {
	t.Helper()
	h, err := netlink.NewHandleAt(ns)
	require.NoError(t, err)
	defer h.Close()
	l, err := h.LinkByName(name)
	require.NoError(t, err)
	return l.Attrs().Index
}

// attach attaches a fault program to a's end, egress.
func (p *pair) attach(t *testing.T, rules ...bpf.Rule) *bpf.Attachment {
	t.Helper()
	var a *bpf.Attachment
	require.NoError(t, netnstest.Do(p.nsA, func() (err error) {
		a, err = bpf.Attach(p.pinDir, p.indexA, bpf.Egress)
		return err
	}))
	t.Cleanup(func() { a.Detach() })
	for i, r := range rules {
		slot, err := a.Add(r)
		require.NoError(t, err)
		require.Equal(t, i, slot)
	}
	return a
}

// packetSocket opens a raw packet socket on ifindex in ns.
func packetSocket(t *testing.T, ns netns.NsHandle, ifindex int, bypass bool) int {
	t.Helper()
	var fd int
	require.NoError(t, netnstest.Do(ns, func() (err error) {
		fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		if bypass {
			if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_QDISC_BYPASS, 1); err != nil {
				return err
			}
		}
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 8<<20); err != nil {
			return err
		}
		tv := unix.Timeval{Usec: 200_000}
		if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
			return err
		}
		return unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifindex})
	}))
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

func frame(etherType uint16, pkt []byte) []byte {
	var dst, src [wire.MACSize]byte
	for i := range dst {
		dst[i] = 0xff
	}
	src[0] = 0x02
	return append(wire.AppendEthernet(nil, dst, src, etherType), pkt...)
}

// dataFrame is a UD packet on VL vl from slid to dlid with payload n bytes.
func dataFrame(vl, sl uint8, dlid, slid uint16, n int) []byte {
	return frame(wire.EtherTypeData, wire.AppendUD(nil, &wire.UDFields{VL: vl, SL: sl, DLID: dlid, SLID: slid,
		PKey: 0xffff, DestQP: 2, SrcQP: 2, QKey: 0x11111111, Payload: make([]byte, n)}))
}

// smpFrame is a directed-route SMP Get of attr on VL15 (QP0).
func smpFrame(t *testing.T, method mad.Method, attr mad.AttrID) []byte {
	t.Helper()
	m, err := mad.AppendDRRequest(nil, &mad.DRRequest{Method: method, TransactionID: 1, AttrID: attr, Path: []uint8{0, 1}})
	require.NoError(t, err)
	return frame(wire.EtherTypeData, wire.AppendUD(nil, &wire.UDFields{VL: 15, DLID: 0xffff, SLID: 0xffff,
		PKey: 0xffff, DestQP: 0, SrcQP: 0, Payload: m}))
}

func linkFrame(vl uint8) []byte {
	return frame(wire.EtherTypeLink, wire.AppendFlowControl(nil, &wire.FlowControlFields{Op: wire.FlowControlNormal, VL: vl, FCTBS: 1, FCCL: 2}))
}

// exchange writes frames on fdA and reads what arrives on fdB until a read
// times out.
func exchange(t *testing.T, fdA, fdB int, frames [][]byte) [][]byte {
	t.Helper()
	for _, f := range frames {
		// A frame the program drops fails the write with ENOBUFS.
		if _, err := unix.Write(fdA, f); err != nil && !errors.Is(err, unix.ENOBUFS) {
			require.NoError(t, err)
		}
	}
	var got [][]byte
	buf := make([]byte, 16<<10)
	for {
		n, err := unix.Read(fdB, buf)
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
			return got
		}
		require.NoError(t, err)
		got = append(got, slices.Clone(buf[:n]))
	}
}

// TestBypassSkipsEgress: a packet socket with PACKET_QDISC_BYPASS skips the
// egress hook, which is why node ports must not set it for faults to work.
func TestBypassSkipsEgress(t *testing.T) {
	for _, bypass := range []bool{false, true} {
		t.Run(fmt.Sprintf("bypass=%v", bypass), func(t *testing.T) {
			p := newPair(t)
			p.attach(t, bpf.Rule{Action: bpf.Drop, Rate: bpf.RateOne})
			fdA := packetSocket(t, p.nsA, p.indexA, bypass)
			fdB := packetSocket(t, p.nsB, p.indexB, false)
			got := exchange(t, fdA, fdB, [][]byte{dataFrame(0, 0, 1, 2, 64)})
			if bypass {
				assert.Len(t, got, 1, "bypass: the egress program did not see the frame")
			} else {
				assert.Empty(t, got, "dropped at egress")
			}
		})
	}
}

// frameMix is one of each kind of frame the rules tell apart, by name.
func frameMix(t *testing.T) map[string][]byte {
	return map[string][]byte{
		"data vl0":         dataFrame(0, 0, 1, 2, 64),
		"data vl1 sl1":     dataFrame(1, 1, 3, 2, 250),
		"data dlid4":       dataFrame(0, 2, 4, 5, 0),
		"smp NodeInfo Get": smpFrame(t, mad.MethodGet, mad.AttrNodeInfo),
		"smp NodeInfo Rsp": smpFrame(t, mad.MethodGetResp, mad.AttrNodeInfo),
		"smp PortInfo Get": smpFrame(t, mad.MethodGet, mad.AttrPortInfo),
		"link vl0":         linkFrame(0),
		"link vl1":         linkFrame(1),
	}
}

// TestRules sends each frame of the mix through a veth whose sending end
// has one rule, and checks which frames arrive, intact or corrupted, and
// the rule's counters.
func TestRules(t *testing.T) {
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range frameMix(t) {
			if !yield(k) {
				return
			}
		}
	})
	all := func(string) bool { return true }
	tests := []struct {
		name string
		rule bpf.Rule
		hit  func(name string) bool // frames the rule acts on
	}{
		{"drop all", bpf.Rule{Action: bpf.Drop}, all},
		{"drop link", bpf.Rule{Action: bpf.Drop, Match: bpf.Match{Fields: bpf.FieldEtherType, EtherType: wire.EtherTypeLink}},
			func(n string) bool { return n[:4] == "link" }},
		{"drop data", bpf.Rule{Action: bpf.Drop, Match: bpf.Match{Fields: bpf.FieldEtherType, EtherType: wire.EtherTypeData}},
			func(n string) bool { return n[:4] != "link" }},
		{"drop vl1", bpf.Rule{Action: bpf.Drop, Match: bpf.Match{Fields: bpf.FieldVL, VL: 1}},
			func(n string) bool { return n == "data vl1 sl1" || n == "link vl1" }},
		{"drop vl15", bpf.Rule{Action: bpf.Drop, Match: bpf.Match{Fields: bpf.FieldVL, VL: 15}},
			func(n string) bool { return n[:3] == "smp" }},
		{"drop sl1", bpf.Rule{Action: bpf.Drop, Match: bpf.Match{Fields: bpf.FieldSL, SL: 1}},
			func(n string) bool { return n == "data vl1 sl1" }},
		{"drop dlid4", bpf.Rule{Action: bpf.Drop, Match: bpf.Match{Fields: bpf.FieldDLID, DLID: 4}},
			func(n string) bool { return n == "data dlid4" }},
		{"drop slid2", bpf.Rule{Action: bpf.Drop, Match: bpf.Match{Fields: bpf.FieldSLID, SLID: 2}},
			func(n string) bool { return n == "data vl0" || n == "data vl1 sl1" }},
		{"drop DR NodeInfo", bpf.Rule{Action: bpf.Drop, Match: bpf.Match{Fields: bpf.FieldClass | bpf.FieldAttr,
			Class: mad.ClassSubnDirected, Attr: mad.AttrNodeInfo}},
			func(n string) bool { return n == "smp NodeInfo Get" || n == "smp NodeInfo Rsp" }},
		{"drop DR NodeInfo Get", bpf.Rule{Action: bpf.Drop, Match: bpf.Match{Fields: bpf.FieldClass | bpf.FieldMethod | bpf.FieldAttr,
			Class: mad.ClassSubnDirected, Method: mad.MethodGet, Attr: mad.AttrNodeInfo}},
			func(n string) bool { return n == "smp NodeInfo Get" }},
		{"drop LID-routed SMPs", bpf.Rule{Action: bpf.Drop, Match: bpf.Match{Fields: bpf.FieldClass, Class: mad.ClassSubnLID}},
			func(string) bool { return false }},
		{"corrupt all", bpf.Rule{Action: bpf.Corrupt}, all},
		{"corrupt PortInfo", bpf.Rule{Action: bpf.Corrupt, Match: bpf.Match{Fields: bpf.FieldAttr, Attr: mad.AttrPortInfo}},
			func(n string) bool { return n == "smp PortInfo Get" }},
	}
	p := newPair(t)
	fdA := packetSocket(t, p.nsA, p.indexA, false)
	fdB := packetSocket(t, p.nsB, p.indexB, false)
	mixes := frameMix(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.rule.Rate = bpf.RateOne
			a := p.attach(t, tt.rule)
			var sent [][]byte
			for _, n := range names {
				sent = append(sent, mixes[n])
			}
			got := exchange(t, fdA, fdB, sent)
			var want [][]byte
			hits := 0
			for _, n := range names {
				if tt.hit(n) {
					hits++
					if tt.rule.Action == bpf.Drop {
						continue
					}
				}
				want = append(want, mixes[n])
			}
			require.Len(t, got, len(want))
			for i, n := range names {
				if tt.rule.Action != bpf.Corrupt {
					break
				}
				f := got[i]
				if !tt.hit(n) {
					assert.Equal(t, mixes[n], f, "%s untouched", n)
					continue
				}
				assert.Equal(t, 1, bitsDiffer(mixes[n], f), "%s: one bit flipped", n)
				pkt := f[wire.EthernetSize:]
				var err error
				if n[:4] == "link" {
					err = wire.VerifyFlowControl(pkt)
					assert.ErrorIs(t, err, wire.ErrLPCRC, n)
				} else {
					err = wire.Verify(pkt)
					assert.ErrorIs(t, err, wire.ErrVCRC, n)
				}
			}
			if tt.rule.Action == bpf.Drop {
				assert.Equal(t, want, got)
			}
			l, err := a.List()
			require.NoError(t, err)
			require.Len(t, l, 1)
			assert.Equal(t, bpf.Counters{Matched: uint64(hits), Acted: uint64(hits)}, l[0].Counters)
			assert.Equal(t, tt.rule, l[0].Rule, "the rule reads back as written")
			require.NoError(t, a.Detach())
		})
	}
}

func bitsDiffer(a, b []byte) int {
	if len(a) != len(b) {
		return -1
	}
	n := 0
	for i := range a {
		for x := a[i] ^ b[i]; x != 0; x &= x - 1 {
			n++
		}
	}
	return n
}

// TestRateAndLimit: a 30 % rule acts on about 30 % of the matches; a rule
// limited to K acts on exactly K; several rules on one device each count
// their own.
func TestRateAndLimit(t *testing.T) {
	p := newPair(t)
	fdA := packetSocket(t, p.nsA, p.indexA, false)
	fdB := packetSocket(t, p.nsB, p.indexB, false)
	a := p.attach(t,
		bpf.Rule{Action: bpf.Drop, Rate: 300_000, Match: bpf.Match{Fields: bpf.FieldVL, VL: 0}},
		bpf.Rule{Action: bpf.Drop, Rate: bpf.RateOne, Limit: 7, Match: bpf.Match{Fields: bpf.FieldVL, VL: 1}},
		bpf.Rule{Action: bpf.Corrupt, Rate: bpf.RateOne, Limit: 5, Match: bpf.Match{Fields: bpf.FieldVL, VL: 2}},
	)
	const n = 1000
	var frames [][]byte
	for i := range n {
		frames = append(frames, dataFrame(uint8(i%3), 0, 1, 2, 32))
	}
	got := exchange(t, fdA, fdB, frames)
	l, err := a.List()
	require.NoError(t, err)
	require.Len(t, l, 3)
	perVL := [3]uint64{334, 333, 333}
	for i, e := range l {
		assert.Equal(t, perVL[i], e.Counters.Matched, "rule %d matched", i)
	}
	// Binomial(334, 0.3): mean 100, sd 8.4.
	assert.InDelta(t, 100, float64(l[0].Counters.Acted), 50, "30%% of 334")
	assert.Equal(t, uint64(7), l[1].Counters.Acted)
	assert.Equal(t, uint64(5), l[2].Counters.Acted)
	assert.Len(t, got, n-int(l[0].Counters.Acted)-7)
	bad := 0
	for _, f := range got {
		if wire.Verify(f[wire.EthernetSize:]) != nil {
			bad++
		}
	}
	assert.Equal(t, 5, bad, "corrupted frames")

	// Removing a rule stops it at once; its slot is reused.
	require.NoError(t, a.Remove(1))
	got = exchange(t, fdA, fdB, [][]byte{dataFrame(1, 0, 1, 2, 32)})
	assert.Len(t, got, 1)
	slot, err := a.Add(bpf.Rule{Action: bpf.Drop, Rate: bpf.RateOne})
	require.NoError(t, err)
	assert.Equal(t, 1, slot)
}

// TestDelay: with fq on the device, delayed frames arrive later than
// undelayed ones, and frames behind a delayed one keep their order. On a
// kernel without fq, SetupFQ says so and delay rules let frames through
// untouched.
func TestDelay(t *testing.T) {
	p := newPair(t)
	h, err := netlink.NewHandleAt(p.nsA)
	require.NoError(t, err)
	defer h.Close()
	fq := true
	if err := bpf.SetupFQ(h, p.indexA); errors.Is(err, bpf.ErrNoFQ) {
		t.Logf("no fq in this kernel: delays not observable, checking counting and order only")
		fq = false
	} else {
		require.NoError(t, err)
		require.NoError(t, bpf.SetupFQ(h, p.indexA), "idempotent")
		ok, err := bpf.HasFQ(h, p.indexA)
		require.NoError(t, err)
		require.True(t, ok)
	}

	fdA := packetSocket(t, p.nsA, p.indexA, false)
	fdB := packetSocket(t, p.nsB, p.indexB, false)
	const delay = 50 * time.Millisecond
	a := p.attach(t, bpf.Rule{Action: bpf.Delay, Rate: bpf.RateOne, Delay: delay, Match: bpf.Match{Fields: bpf.FieldVL, VL: 1}})

	// transit sends one frame and returns how long it took to arrive.
	transit := func(f []byte) time.Duration {
		start := time.Now()
		_, err := unix.Write(fdA, f)
		require.NoError(t, err)
		buf := make([]byte, 16<<10)
		tv := unix.Timeval{Sec: 2}
		require.NoError(t, unix.SetsockoptTimeval(fdB, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv))
		defer func() {
			tv := unix.Timeval{Usec: 200_000}
			require.NoError(t, unix.SetsockoptTimeval(fdB, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv))
		}()
		n, err := unix.Read(fdB, buf)
		require.NoError(t, err)
		require.Equal(t, f, buf[:n])
		return time.Since(start)
	}
	var plain, delayed []time.Duration
	for i := range 5 {
		plain = append(plain, transit(dataFrame(0, 0, uint16(i), 2, 32)))
		delayed = append(delayed, transit(dataFrame(1, 0, uint16(i), 2, 32)))
	}
	slices.Sort(plain)
	slices.Sort(delayed)
	t.Logf("median transit: %v plain, %v with a %v delay rule (fq %v)", plain[2], delayed[2], delay, fq)
	if fq {
		assert.Greater(t, delayed[2], plain[2])
	}

	var frames [][]byte
	for i := range 20 {
		frames = append(frames, dataFrame(uint8(i%2), 0, uint16(i), 2, 32))
	}
	got := exchange(t, fdA, fdB, frames)
	assert.Equal(t, frames, got, "every frame, in order")
	l, err := a.List()
	require.NoError(t, err)
	assert.Equal(t, bpf.Counters{Matched: 15, Acted: 15}, l[0].Counters)

	if fq {
		require.NoError(t, bpf.RemoveFQ(h, p.indexA))
		ok, err := bpf.HasFQ(h, p.indexA)
		require.NoError(t, err)
		assert.False(t, ok)
	}
}

// TestPinnedLifecycle: the program stays attached after its Attachment is
// closed (the pins hold it), Open finds it again, Detach takes it off, and
// a pinned program whose device was deleted reads as stale.
func TestPinnedLifecycle(t *testing.T) {
	p := newPair(t)
	attached := func() []ebpf.ProgramID {
		var ids []ebpf.ProgramID
		require.NoError(t, netnstest.Do(p.nsA, func() (err error) {
			ids, err = bpf.Attached(p.indexA, bpf.Egress)
			return err
		}))
		return ids
	}
	a := p.attach(t, bpf.Rule{Action: bpf.Drop, Rate: bpf.RateOne})
	id, err := a.ProgramID()
	require.NoError(t, err)
	require.NoError(t, a.Close())
	assert.Equal(t, []ebpf.ProgramID{id}, attached(), "attached while pinned")

	a, err = bpf.Open(p.pinDir)
	require.NoError(t, err)
	idx, ok := a.Ifindex()
	assert.True(t, ok)
	assert.Equal(t, p.indexA, idx)
	l, err := a.List()
	require.NoError(t, err)
	assert.Len(t, l, 1)
	require.NoError(t, a.Detach())
	assert.Empty(t, attached(), "detached")
	_, err = bpf.Open(p.pinDir)
	assert.ErrorIs(t, err, os.ErrNotExist)

	// The device goes; the pinned link stays, stale.
	p.attach(t).Close()
	h, err := netlink.NewHandleAt(p.nsA)
	require.NoError(t, err)
	defer h.Close()
	link, err := h.LinkByIndex(p.indexA)
	require.NoError(t, err)
	require.NoError(t, h.LinkDel(link))
	a, err = bpf.Open(p.pinDir)
	require.NoError(t, err)
	_, ok = a.Ifindex()
	assert.False(t, ok, "stale after the device went")
	require.NoError(t, a.Detach())
}
