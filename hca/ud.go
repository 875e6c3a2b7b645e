package hca

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"ibfab/port"
	"ibfab/wire"
	"ibfab/wire/mad"
)

// UD data QP constants. ibfab has no verbs consumers yet, so one QP number
// and one Q_Key serve all generated traffic.
const (
	DataQP   = 2          // source QP of what SendUD sends
	DataQKey = 0x11111111 // Q_Key of the data QP's datagrams
)

// ErrPKey is wrapped by the errors of a P_Key or P_Key index the port's
// table does not hold.
var ErrPKey = errors.New("hca: no such P_Key")

// SendUD sends payload in one UD SEND_ONLY packet from port num to dlid and
// destQP, on the VL the port's SLtoVL table (programmed by the SM) maps sl
// to, with the port's LID as SLID and the P_Key at index 0 of its table. It
// returns ErrUnmapped when sl has no data VL, and the port's error when the
// port drops the packet (not Active, VL not operational, …).
func (h *HCA) SendUD(num uint8, dlid uint16, sl uint8, destQP uint32, payload []byte) error {
	return h.sendUD(num, dlid, sl, destQP, 0, payload)
}

// sendUD is SendUD with the P_Key at pkeyIndex of the port's table, as a
// QP bound to that index sends.
func (h *HCA) sendUD(num uint8, dlid uint16, sl uint8, destQP uint32, pkeyIndex uint16, payload []byte) error {
	p := h.Port(num)
	if p == nil {
		return fmt.Errorf("%w: %d", ErrPort, num)
	}
	if len(payload) > p.Config().MTU {
		return fmt.Errorf("%w: %d bytes over MTU %d", ErrPayload, len(payload), p.Config().MTU)
	}
	vl := h.agent.VLFor(0, num, sl)
	if vl >= port.VL15 {
		return fmt.Errorf("%w: SL %d", ErrUnmapped, sl)
	}
	pkey, err := h.sendPKey(num, pkeyIndex)
	if err != nil {
		return err
	}
	f := wire.UDFields{
		VL: vl, SL: sl, DLID: dlid, SLID: h.LID(num),
		PKey: uint16(pkey), DestQP: destQP, QKey: DataQKey, SrcQP: DataQP,
		Payload: payload,
	}
	pkt := port.AllocPacket(wire.UDPacketSize(len(payload), false))
	pkt.Bytes = wire.AppendUD(pkt.Bytes[:0], &f)
	if err := p.Send(pkt); err != nil {
		return err
	}
	h.pstat[num-1].sent(len(payload))
	return nil
}

// sendPKey is the P_Key data packets sent with pkey index idx carry: the
// entry there now (the SM may rewrite the table under a running QP). An
// invalid entry (base 0) is an error, except at index 0, which sends the
// default partition's key as after reset.
func (h *HCA) sendPKey(num uint8, idx uint16) (mad.PKey, error) {
	t := h.agent.PKeys(num)
	if int(idx) < len(t) && t[idx].Base() != 0 {
		return t[idx], nil
	}
	if idx == 0 {
		return mad.DefaultPKey, nil
	}
	return 0, fmt.Errorf("%w: P_Key index %d of port %d holds no valid P_Key", ErrPKey, idx, num)
}

// PKeyIndex returns the index of k in port num's P_Key table: the entry
// equal to k, else the first with k's base (the port's own membership of
// that partition), as a verbs consumer finds the index to bind a QP to.
func (h *HCA) PKeyIndex(num uint8, k mad.PKey) (uint16, error) {
	t := h.agent.PKeys(num)
	if k.Base() != 0 {
		for i, e := range t {
			if e == k {
				return uint16(i), nil
			}
		}
		for i, e := range t {
			if e.Base() == k.Base() {
				return uint16(i), nil
			}
		}
	}
	return 0, fmt.Errorf("%w: %#04x not in the P_Key table of port %d", ErrPKey, uint16(k), num)
}

// portStats is one port's data-QP accounting.
type portStats struct {
	mu                   sync.Mutex
	txPackets, txBytes   uint64
	rxPackets, rxBytes   uint64
	rxStamped, rxForeign uint64
	hist                 *Histogram
	from                 map[uint16]*SourceStats // by the sender's LID
	rxFlow               uint64                  // of rxPackets, flow packets (not in hist)
	flows                map[flowKey]*flowRx
}

// SourceStats is what a port received from one sender (by SLID): a probe's
// receiver record. Gap is the longest time between two consecutive
// packets from the sender since the record was last read with reset, and
// GapEnd when it ended (the arrival of the packet after it), so a reader
// polling now and then still learns exactly when a lost route came back.
type SourceStats struct {
	Packets uint64 `json:"packets"`
	Last    int64  `json:"last_ns"`    // arrival of the last packet, Unix ns on the HCA's clock
	Gap     int64  `json:"gap_ns"`     // longest gap since the last reset
	GapEnd  int64  `json:"gap_end_ns"` // arrival of the packet that ended it
	// GapEndLatency is how long the packet that ended the gap was on its
	// way (its send stamp to its arrival; 0 unstamped): near the gap, the
	// packets were late, held somewhere, not lost.
	GapEndLatency int64 `json:"gap_end_latency_ns,omitempty"`
}

func (s *portStats) sent(n int) {
	s.mu.Lock()
	s.txPackets++
	s.txBytes += uint64(n)
	s.mu.Unlock()
}

// rxPacket is one UD data packet as the port's accounting sees it.
type rxPacket struct {
	slid    uint16
	sl      uint8
	wire    int // bytes, LRH through VCRC
	payload []byte
}

// receive counts a packet arriving now. A flow's packet goes to its
// flow's record, with its latency, and not into the port's histogram,
// which stays the generator's (best effort); bucket is the time series
// interval of a flow record it creates.
func (s *portStats) receive(now time.Time, pk rxPacket, bucket time.Duration) {
	ns, stamped := readStamp(pk.payload)
	tag, isFlow := ReadFlowTag(pk.payload)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rxPackets++
	s.rxBytes += uint64(len(pk.payload))
	var lat int64
	if stamped {
		lat = max(now.UnixNano()-ns, 0)
	}
	s.fromSource(now.UnixNano(), pk.slid, lat)
	switch {
	case isFlow:
		s.rxFlow++
		s.receiveFlow(now.UnixNano(), pk.slid, pk.sl, tag, pk.wire, len(pk.payload), now.Sub(time.Unix(0, ns)), bucket)
	case stamped:
		s.rxStamped++
		s.hist.Add(now.Sub(time.Unix(0, ns)))
	default:
		s.rxForeign++
	}
}

// fromSource counts a packet from slid that arrived at ns after latency
// on its way; s.mu is held.
func (s *portStats) fromSource(ns int64, slid uint16, latency int64) {
	if s.from == nil {
		s.from = map[uint16]*SourceStats{}
	}
	src := s.from[slid]
	if src == nil {
		s.from[slid] = &SourceStats{Packets: 1, Last: ns}
		return
	}
	if g := ns - src.Last; g > src.Gap {
		src.Gap, src.GapEnd, src.GapEndLatency = g, ns, latency
	}
	src.Packets++
	src.Last = ns
}

// RxFrom returns what port num received from each sender LID; with reset,
// each sender's longest gap starts over (from its last packet).
func (h *HCA) RxFrom(num uint8, reset bool) (map[uint16]SourceStats, error) {
	if num == 0 || int(num) > len(h.pstat) {
		return nil, fmt.Errorf("%w: %d", ErrPort, num)
	}
	s := &h.pstat[num-1]
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[uint16]SourceStats, len(s.from))
	for slid, src := range s.from {
		out[slid] = *src
		if reset {
			src.Gap, src.GapEnd, src.GapEndLatency = 0, 0, 0
		}
	}
	return out, nil
}

// PortStats is one port's status: state, LID, data-QP accounting, the link
// layer's drops by cause and the latency histogram. Field names are the
// control socket's JSON interface: add, never rename.
type PortStats struct {
	Port      uint8             `json:"port"`
	State     string            `json:"state"`
	Phys      string            `json:"phys"`
	LID       uint16            `json:"lid"`
	TxPackets uint64            `json:"tx_packets"`
	TxBytes   uint64            `json:"tx_bytes"`
	RxPackets uint64            `json:"rx_packets"`
	RxBytes   uint64            `json:"rx_bytes"`
	RxStamped uint64            `json:"rx_stamped"` // of RxPackets, a generator's, with a send stamp (in Latency)
	RxFlow    uint64            `json:"rx_flow"`    // of RxPackets, flows' (see HCA.FlowsReceived)
	Drops     map[string]uint64 `json:"drops,omitempty"`
	DropTotal uint64            `json:"drop_total"`
	Latency   LatencySnapshot   `json:"latency"`
	Generator *GeneratorStats   `json:"generator,omitempty"`
	// CC is the port's congestion control counters (see CCAStatus).
	CC *CCACounters `json:"cc,omitempty"`
}

// Stats is the HCA's status.
type Stats struct {
	NodeGUID      string      `json:"guid"`
	Ports         []PortStats `json:"ports"`
	ClientDropped uint64      `json:"client_dropped"` // local MADs with no MADClient
}

// Stats returns a snapshot of every port.
func (h *HCA) Stats() Stats {
	st := Stats{
		NodeGUID:      fmt.Sprintf("%#016x", h.agent.NodeGUID()),
		ClientDropped: h.clientDropped.Load(),
	}
	for i := range h.ports {
		num := uint8(i + 1)
		ps := PortStats{Port: num, LID: h.LID(num)}
		if p := h.ports[i].Load(); p != nil {
			s := p.State()
			ps.State, ps.Phys = s.Port.String(), s.Phys.String()
			d := p.Drops()
			ps.Drops, ps.DropTotal = d.Map(), d.Total()
		}
		s := &h.pstat[i]
		s.mu.Lock()
		ps.TxPackets, ps.TxBytes = s.txPackets, s.txBytes
		ps.RxPackets, ps.RxBytes, ps.RxStamped, ps.RxFlow = s.rxPackets, s.rxBytes, s.rxStamped, s.rxFlow
		ps.Latency = s.hist.Snapshot()
		s.mu.Unlock()
		if g := h.generator(num); g != nil {
			gs := g.Stats()
			ps.Generator = &gs
		}
		cc := h.ccas[i].counters()
		ps.CC = &cc
		st.Ports = append(st.Ports, ps)
	}
	return st
}

// Latency returns port num's receive latency p50 and p99.
func (h *HCA) Latency(num uint8) (p50, p99 time.Duration) {
	if num == 0 || int(num) > len(h.pstat) {
		return 0, 0
	}
	s := &h.pstat[num-1]
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hist.P50(), s.hist.P99()
}
