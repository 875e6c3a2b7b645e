package nodeproc

import (
	"encoding/json"

	"ibfab/internal/enum"
	"ibfab/port"
)

// DropsArgs are the "drops" op's arguments: the records at or after
// SinceNs (the node's clock, Unix ns; 0: every record kept).
type DropsArgs struct {
	SinceNs int64 `json:"since_ns"`
}

// DropsReply is what the "drops" op answers: the node's recent data-packet
// drops (port.DropLog), oldest first. Written counts every record ever
// made and Size is the ring's: a reader whose Written grew by more than
// Size since its last read lost records. NowNs is the node's clock at the
// reply.
type DropsReply struct {
	Records []DropRecord `json:"records"`
	Written uint64       `json:"written"`
	Size    int          `json:"size"`
	NowNs   int64        `json:"now_ns"`
}

// DropRecord is one port.DropRecord as the "drops" op carries it: the
// cause by the name status shows, the direction rx (dropped as received:
// unroutable, P_Key, input port down, …) or tx (as sent: link down while
// queued, port not active, …).
type DropRecord struct {
	AtNs  int64          `json:"at_ns"`
	Port  uint8          `json:"port"`
	Out   uint8          `json:"out,omitempty"` // a switch's output port it was routed to
	Cause port.DropCause `json:"cause"`
	Dir   DropDir        `json:"dir"`
	SLID  uint16         `json:"slid"`
	DLID  uint16         `json:"dlid"`
	VL    uint8          `json:"vl"`
	SL    uint8          `json:"sl"`
}

// DropDir is whether a packet was dropped as received or as sent.
type DropDir uint8

//go:generate go tool stringer -type=DropDir -linecomment

const (
	DropRx DropDir = iota // rx
	DropTx                // tx
)

var dropDirs = enum.New("drop direction", DropRx, DropTx)

// MarshalText implements encoding.TextMarshaler.
func (d DropDir) MarshalText() ([]byte, error) { return dropDirs.Marshal(d) }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *DropDir) UnmarshalText(text []byte) error { return dropDirs.Unmarshal(d, text) }

// dropsOp serves "drops".
func (n *Node) dropsOp(args json.RawMessage) (DropsReply, error) {
	var a DropsArgs
	if len(args) > 0 { // no args: every record
		if err := decodeArgs(args, &a); err != nil {
			return DropsReply{}, err
		}
	}
	recs, written := n.drops.Since(a.SinceNs, nil)
	out := DropsReply{Records: make([]DropRecord, 0, len(recs)), Written: written, Size: n.drops.Size(), NowNs: n.now()}
	for _, r := range recs {
		dir := DropRx
		if r.Sending {
			dir = DropTx
		}
		out.Records = append(out.Records, DropRecord{AtNs: r.At, Port: r.Port, Out: r.Out, Cause: r.Cause, Dir: dir,
			SLID: r.SLID, DLID: r.DLID, VL: r.VL, SL: r.SL})
	}
	return out, nil
}

// newDropLog gives the ports built from tmpl one shared drop log.
func (n *Node) newDropLog(tmpl *port.Config) {
	n.drops = port.NewDropLog(0)
	tmpl.DropLog = n.drops
}

// now is the node's clock in Unix ns.
func (n *Node) now() int64 {
	if n.clk == nil {
		return 0
	}
	return n.clk.Now().UnixNano()
}
