package nodeproc

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"ibfab/softswitch"
	"ibfab/wire/mad"
)

// SwitchConfigArgs are the "switch-config" op's arguments, all optional:
// what is not given stays as it is, and no arguments only read. The op
// answers with the SwitchConfigStatus after the change.
type SwitchConfigArgs struct {
	// VLBlocks resizes the receive buffers of data VLs 0, 1, … of every
	// port, as --vl-blocks does at start (VLs past the list get
	// --rx-blocks; port.Port.SetVLBlocks says what happens to buffers
	// that hold packets). To go back to --rx-blocks everywhere, give the
	// list in full.
	VLBlocks []int `json:"vl_blocks,omitempty"`
	// Arch, when given, is the switch architecture, "voq" or "iq"
	// (softswitch.SetArch: never reorders a VL's packets; at once on an
	// idle switch).
	Arch *softswitch.Arch `json:"arch,omitempty"`
	// ResetDownstream makes every port learn its peer's buffers afresh
	// (port.Port.ResetDownstream), for after the neighbours' buffers
	// changed, on an idle fabric.
	ResetDownstream bool `json:"reset_downstream,omitempty"`
	// CreditSlack, when given, sets every port's port.Config.CreditSlack:
	// the freed blocks a port may hold back before it tells its peer (0,
	// the default coalescing; 1, every release at once, what adaptive
	// routing's view of the downstream buffers wants).
	CreditSlack *int `json:"credit_slack,omitempty"`
}

// SwitchConfigStatus is a switch's data-plane configuration: its
// architecture, the per-VL buffers its ports were given (none: rx_blocks
// on every VL), the adaptive routing the subnet manager set (the agent's
// ARTable: mode, threshold in percent, AFC VL) and the DLIDs it watches.
type SwitchConfigStatus struct {
	Arch        softswitch.Arch `json:"arch"`
	RxBlocks    int             `json:"rx_blocks"`
	VLBlocks    []int           `json:"vl_blocks,omitempty"`
	CreditSlack int             `json:"credit_slack"`
	ARMode      mad.ARMode      `json:"ar_mode"`
	ARThreshold uint8           `json:"ar_threshold"`
	AFCVL       uint8           `json:"afc_vl"`
	Watched     []uint16        `json:"watched,omitempty"`
}

// WatchArgs are the "watch" op's arguments: the DLIDs whose packets the
// switch counts per input port and VL (status: credits[].watched). They
// replace the ones watched before and start the counts over; none stops
// watching. The op answers with the DLIDs watched.
type WatchArgs struct {
	LIDs []uint16 `json:"lids"`
}

// switchOp serves the ops only a switch has; ok is false for other ops.
func (n *Node) switchOp(op string, args json.RawMessage) (res any, ok bool, err error) {
	switch op {
	case "switch-config":
		var a SwitchConfigArgs
		if len(args) > 0 && string(args) != "null" {
			if err := decodeArgs(args, &a); err != nil {
				return nil, true, err
			}
		}
		res, err := n.switchConfig(a)
		return res, true, err
	case "watch":
		var a WatchArgs
		if err := decodeArgs(args, &a); err != nil {
			return nil, true, err
		}
		n.sw.Watch(a.LIDs)
		return WatchArgs{LIDs: n.sw.Watched()}, true, nil
	}
	return nil, false, nil
}

// switchConfig applies a "switch-config": everything is checked before
// anything changes.
func (n *Node) switchConfig(a SwitchConfigArgs) (SwitchConfigStatus, error) {
	arch := n.sw.Arch()
	if a.Arch != nil {
		arch = *a.Arch
	}
	if a.CreditSlack != nil && *a.CreditSlack < 0 {
		return SwitchConfigStatus{}, fmt.Errorf("switch-config: credit slack of %d blocks", *a.CreditSlack)
	}
	if a.VLBlocks != nil {
		if err := n.sw.SetVLBlocks(a.VLBlocks); err != nil {
			return SwitchConfigStatus{}, fmt.Errorf("switch-config: %w", err)
		}
	}
	if err := n.sw.SetArch(arch); err != nil {
		return SwitchConfigStatus{}, fmt.Errorf("switch-config: %w", err)
	}
	if a.CreditSlack != nil {
		n.sw.SetCreditSlack(*a.CreditSlack)
	}
	if a.ResetDownstream {
		n.sw.ResetDownstream()
	}
	return n.switchConfigStatus(), nil
}

func (n *Node) switchConfigStatus() SwitchConfigStatus {
	t := n.sw.Agent().ARTable()
	return SwitchConfigStatus{
		Arch: n.sw.Arch(), RxBlocks: n.rxBlocks(), VLBlocks: n.sw.VLBlocks(), CreditSlack: n.sw.CreditSlack(),
		ARMode: t.Mode, ARThreshold: t.Threshold, AFCVL: t.AFCVL, Watched: n.sw.Watched(),
	}
}

// rxBlocks returns the buffer of the VLs the per-VL sizes leave out.
func (n *Node) rxBlocks() int {
	for num := uint8(1); num <= n.sw.NumPorts(); num++ {
		if p := n.sw.Port(num); p != nil {
			return p.Config().RxBlocks
		}
	}
	return 0
}

// switchPortStatus adds the crossbar's counts to the switch's ports'
// status: adapted packets, and per VL the packets received and watched.
func (n *Node) switchPortStatus(ports []PortStatus) {
	for i := range ports {
		c := n.sw.PortCounts(uint8(ports[i].Port))
		ports[i].Adapted = c.Adapted
		for j := range ports[i].Credits {
			vl := ports[i].Credits[j].VL
			if vl < len(c.RcvByVL) {
				ports[i].Credits[j].RcvPkts = c.RcvByVL[vl]
				ports[i].Credits[j].Watched = c.WatchedByVL[vl]
			}
		}
	}
}

// blockList is --vl-blocks: comma-separated block counts.
type blockList []int

func (b *blockList) String() string {
	if b == nil {
		return ""
	}
	s := make([]string, len(*b))
	for i, v := range *b {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ",")
}

func (b *blockList) Set(s string) error {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 0 {
			return fmt.Errorf("%q: want block counts like 512,512,0", s)
		}
		out = append(out, v)
	}
	*b = out
	return nil
}
