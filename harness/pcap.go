package harness

import (
	"errors"
	"fmt"
	"time"

	"github.com/gopacket/gopacket"

	"ibfab/capture"
	"ibfab/topologies"
	"ibfab/wire"
	"ibfab/wire/mad"
)

// sampleCredits is the FCCL the sample's flow-control Init packets
// advertise: a 16 KiB receive buffer on VL0, in 64-byte blocks.
const sampleCredits = 256

// WriteDiscoverySample writes to w, from start on, the link packets that
// train every link of t (flow-control Init, both directions) and then the
// directed-route NodeInfo Gets a subnet manager on t's first CA sends to
// discover t breadth first: one out of every cabled port of each switch it
// reaches, the arrival port included, as in the thesis's discovery. It
// returns the number of frames written. The frames are built, not captured:
// no fabric runs.
func WriteDiscoverySample(t *topologies.Topology, w *capture.Writer, start time.Time) (int, error) {
	root := -1
	for i, n := range t.Nodes() {
		if n.Type == topologies.CA {
			root = i
			break
		}
	}
	if root < 0 {
		return 0, errors.New("the topology has no CA for the subnet manager")
	}
	ts := start
	n := 0
	write := func(k capture.RecordType, pkt []byte) error {
		n++
		ts = ts.Add(time.Microsecond)
		return w.WritePacket(k, ts, pkt)
	}
	var buf []byte
	for range 2 * t.NumLinks() { // one Init from each end of every link
		buf = wire.AppendFlowControl(buf[:0], &wire.FlowControlFields{Op: wire.FlowControlInit, VL: 0, FCCL: sampleCredits})
		if err := write(capture.TypeInfiniBandLink, buf); err != nil {
			return n, err
		}
	}

	type hop struct {
		node int
		path []uint8 // path[0] unused, as in the DR SMP
	}
	seen := map[int]bool{root: true}
	queue := []hop{{node: root, path: []uint8{0}}}
	var tid uint64
	send := func(path []uint8) error {
		tid++
		smp, err := mad.AppendDRRequest(nil, &mad.DRRequest{Method: mad.MethodGet, TransactionID: tid, AttrID: mad.AttrNodeInfo, Path: path})
		if err != nil {
			return err
		}
		buf = wire.AppendUD(buf[:0], &wire.UDFields{
			VL: 15, DLID: mad.PermissiveLID, SLID: mad.PermissiveLID, PKey: 0xffff,
			DestQP: wire.QP0, SrcQP: wire.QP0, Payload: smp,
		})
		return write(capture.TypeInfiniBand, buf)
	}
	if err := send(queue[0].path); err != nil {
		return n, err
	}
	for len(queue) > 0 {
		h := queue[0]
		queue = queue[1:]
		node := t.Node(h.node)
		if node.Type != topologies.Switch && h.node != root {
			continue // CAs do not forward: nothing lies behind them
		}
		for p := 1; p <= node.NumPorts; p++ {
			peer, ok := t.Peer(topologies.PortRef{Node: h.node, Port: p})
			if !ok {
				continue
			}
			path := append(append([]uint8(nil), h.path...), uint8(p))
			if len(path)-1 > mad.MaxHopCount {
				return n, fmt.Errorf("node %s is more than %d hops from the SM", t.Node(peer.Node).Name, mad.MaxHopCount)
			}
			if err := send(path); err != nil {
				return n, err
			}
			if !seen[peer.Node] {
				seen[peer.Node] = true
				queue = append(queue, hop{node: peer.Node, path: path})
			}
		}
	}
	return n, nil
}

// FrameDecoder decodes capture records with reused layers, as a port does
// (ibfab pcap decode).
type FrameDecoder struct {
	lrh    wire.LRHLayer
	grh    wire.GRHLayer
	bth    wire.BTHLayer
	deth   wire.DETHLayer
	mad    mad.MADLayer
	smp    mad.SMPLayer
	drsmp  mad.DRSMPLayer
	pma    mad.PMALayer
	parser *gopacket.DecodingLayerParser
	found  []gopacket.LayerType
}

// NewFrameDecoder returns a decoder of IBA capture records.
func NewFrameDecoder() *FrameDecoder {
	d := &FrameDecoder{}
	d.deth.BTH = &d.bth
	d.parser = gopacket.NewDecodingLayerParser(wire.LayerTypeLRH, &d.lrh, &d.grh, &d.bth, &d.deth, &d.mad, &d.smp, &d.drsmp, &d.pma)
	d.parser.IgnoreUnsupported = true
	return d
}

// Describe returns one line about rec and whether it decoded and verified.
func (d *FrameDecoder) Describe(rec capture.Record) (string, bool) {
	switch rec.Type {
	case capture.TypeInfiniBandLink:
		if err := wire.VerifyFlowControl(rec.Data); err != nil {
			return "link: " + err.Error(), false
		}
		fc := wire.FlowControl(rec.Data).Fields()
		return fmt.Sprintf("link  FlowControl op=%s VL%d FCTBS=%d FCCL=%d", fc.Op, fc.VL, fc.FCTBS, fc.FCCL), true
	case capture.TypeInfiniBand:
	default:
		return fmt.Sprintf("ERF type %d: not an InfiniBand record", rec.Type), false
	}
	if err := wire.Verify(rec.Data); err != nil {
		return "data: " + err.Error(), false
	}
	if err := d.parser.DecodeLayers(rec.Data, &d.found); err != nil {
		return "data: " + err.Error(), false
	}
	s := fmt.Sprintf("data  VL%-2d %5d -> %-5d", d.lrh.VL, d.lrh.SLID, d.lrh.DLID)
	for _, lt := range d.found {
		switch lt {
		case wire.LayerTypeBTH:
			s += fmt.Sprintf(" %s QP%d", d.bth.OpCode, d.bth.DestQP)
		case mad.LayerTypeMAD:
			s += fmt.Sprintf(" %s %s %s", d.mad.MgmtClass, d.mad.Method, d.mad.AttrID.Name(d.mad.MgmtClass))
		case mad.LayerTypeDRSMP:
			s += fmt.Sprintf(" hops=%d/%d path=%v", d.mad.HopPointer(), d.mad.HopCount(), d.drsmp.InitialPath[1:d.mad.HopCount()+1])
		}
	}
	return s, true
}
