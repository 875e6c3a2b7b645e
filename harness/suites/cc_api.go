package suites

import (
	"context"

	"ibfab/harness"
	"ibfab/nodeproc"
)

// The congestion-control experiment's only contact with the parts issue
// 19 adds to the devices (CC-PLAN contracts 2 and 4): the "cca" op
// (harness.CCA, nodeproc.CCAArgs and CCAStatus), a port's congestion
// counters (nodeproc.PortStatus.Congestion) and flows of messages
// (nodeproc.FlowArgs.MessageBytes). Everything else of `ibfab run cc`
// reads the local types below, so that this file is the one to change
// when those names land.

// ccaMode is a CA's congestion-control mode (CCAArgs.Mode).
type ccaMode string

// The CCA's modes.
const (
	ccaOff ccaMode = "off"
	ccaIBA ccaMode = "iba" // IBA CC: throttling by the CCT
	ccaDRB ccaMode = "drb" // DRB: alias paths instead of throttling
)

// ccaCounters are a CA's congestion-control counters (CCAStatus's).
type ccaCounters struct {
	CNPSent      uint64 `json:"cnp_sent"`
	CNPReceived  uint64 `json:"cnp_received"`
	BECNReceived uint64 `json:"becn_received"`
	Opens        uint64 `json:"opens"`  // DRB: alias paths opened
	Closes       uint64 `json:"closes"` // DRB: alias paths closed
}

// ccaEntry is a source CA's state for one destination and SL.
type ccaEntry struct {
	DLID  uint16 `json:"dlid"` // the destination's base LID
	SL    uint8  `json:"sl"`
	CCTI  int    `json:"ccti"`
	IPDNs int64  `json:"ipd_ns"`
	// Active are the DLIDs (base and aliases) DRB sends on now;
	// Notifications the BECNs counted per path, in the same order.
	Active        []uint16 `json:"active,omitempty"`
	Notifications []uint64 `json:"notifications,omitempty"`
}

// ccaState is what the cca op answers.
type ccaState struct {
	Mode     ccaMode     `json:"mode"`
	Cap      int         `json:"cap,omitempty"`
	Counters ccaCounters `json:"counters"`
	Entries  []ccaEntry  `json:"entries,omitempty"`
}

// ccPortMarks are a port's congestion counters (CongestionStatus).
type ccPortMarks struct {
	Marked  uint64 `json:"marked"`   // FECN marks this port made as an output
	RcvFECN uint64 `json:"rcv_fecn"` // data packets received with FECN set
	RcvBECN uint64 `json:"rcv_becn"`
}

// callCCA sets node's CCA to mode (with DRB's cap; 0: the CA's default)
// or, with mode "", only reads it. Setting a mode starts the CA's
// per-destination state afresh.
func callCCA(ctx context.Context, fabric, node string, mode ccaMode, cap int) (ccaState, error) {
	st, err := harness.CCA(ctx, fabric, node, nodeproc.CCAArgs{Mode: string(mode), Cap: cap})
	if err != nil {
		return ccaState{}, err
	}
	out := ccaState{Mode: ccaMode(st.Mode), Cap: st.Cap, Counters: ccaCounters{
		CNPSent: st.CNPSent, CNPReceived: st.CNPReceived, BECNReceived: st.BECNReceived,
		Opens: st.Opens, Closes: st.Closes}}
	for _, d := range st.Dests {
		out.Entries = append(out.Entries, ccaEntry{DLID: d.DLID, SL: d.SL, CCTI: int(d.CCTI), IPDNs: d.IPDNs,
			Active: d.Active, Notifications: d.Notifications})
	}
	return out, nil
}

// portMarks returns a port's congestion counters; a port without them
// (nil) has none.
func portMarks(p nodeproc.PortStatus) ccPortMarks {
	c := p.Congestion
	if c == nil {
		return ccPortMarks{}
	}
	return ccPortMarks{Marked: c.Marked, RcvFECN: c.RcvFECN, RcvBECN: c.RcvBECN}
}
