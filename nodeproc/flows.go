package nodeproc

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"ibfab/hca"
	"ibfab/wire/mad"
)

// FlowArgs are the "flow-start" op's arguments: one flow of an HCA port
// beside its best-effort generator (hca.FlowConfig). The op answers with
// the flow's FlowStats as started (its VL, wire bytes per packet and
// interval filled in).
type FlowArgs struct {
	// ID names the flow on this HCA; non-zero, so that a request
	// without one is refused rather than taken as flow 0.
	ID   uint32 `json:"id"`
	Port uint8  `json:"port,omitempty"` // default 1
	DLID uint16 `json:"dlid"`
	SL   uint8  `json:"sl"`
	// RateBPS is the flow's rate in bits per second of whole packets on
	// the wire (LRH through VCRC), as the link rate counts them.
	RateBPS uint64 `json:"rate_bps"`
	Payload int    `json:"payload,omitempty"` // bytes; default 2048
	// MessageBytes, when set, makes each arrival a message of that many
	// bytes split into packets of Payload bytes (the last shorter), all
	// stamped with the message's generation time; RateBPS counts the
	// message's wire bytes, the counters and MaxBacklog count packets
	// (hca.FlowConfig.MessageBytes).
	MessageBytes int `json:"message_bytes,omitempty"`
	// Pattern is "cbr" (fixed intervals, the default) or "poisson".
	Pattern    hca.Pattern `json:"pattern,omitempty"`
	Seed       uint64      `json:"seed,omitempty"`
	MaxBacklog int         `json:"max_backlog,omitempty"` // packets waiting at the source; default 64
	// PKeyIndex and PKey choose the partition as TrafficArgs' do.
	PKeyIndex uint16 `json:"pkey_index,omitempty"`
	PKey      uint16 `json:"pkey,omitempty"`
	// Dests, instead of DLID and SL, gives the flow several
	// destinations, each on its own SL; Order ("uniform", the default,
	// or "in-turn") and Burst say how each arrival's is drawn, Messages
	// ends the flow after that many arrivals (hca.FlowConfig).
	Dests    []FlowDest    `json:"dests,omitempty"`
	Order    hca.DestOrder `json:"order,omitempty"`
	Burst    int           `json:"burst,omitempty"`
	Messages uint64        `json:"messages,omitempty"`
}

// FlowsStartArgs are the "flows-start" op's arguments: several flows
// started in one call (a uniform load is a flow per SL at every HCA). The
// op answers with their FlowStats in the same order; on the first error
// the flows it started are stopped again.
type FlowsStartArgs struct {
	Flows []FlowArgs `json:"flows"`
}

// FlowsStopArgs are the "flows-stop" op's arguments: the flows to stop,
// or every flow of the HCA with All. Flows already gone are no error;
// the op answers with the final FlowStats of those it stopped.
type FlowsStopArgs struct {
	IDs []uint32 `json:"ids,omitempty"`
	All bool     `json:"all,omitempty"`
}

// FlowStopArgs are the "flow-stop" op's arguments; the op answers with
// the flow's final FlowStats.
type FlowStopArgs struct {
	ID uint32 `json:"id"`
}

// FlowsArgs are the "flows" op's arguments, all optional.
type FlowsArgs struct {
	// Reset starts every count over after the report: the senders'
	// counters (the flows keep running) and the receivers' records.
	Reset bool `json:"reset,omitempty"`
	// BucketMS sets the interval of the receivers' time series, in
	// emulated ms, for records created after this call (use with Reset);
	// 0 keeps it (default 100).
	BucketMS float64 `json:"bucket_ms,omitempty"`
}

// FlowStats is a flow's sender side; FlowRxStats what a port received of
// one flow.
type (
	FlowStats   = hca.FlowStats
	FlowRxStats = hca.FlowRxStats
	// FlowDest is one destination of a flow with several.
	FlowDest = hca.FlowDest
)

// FlowsReport is what the "flows" op returns: every flow this HCA sends
// and every flow its ports receive, by (port, source LID, ID).
type FlowsReport struct {
	Sent     []FlowStats   `json:"sent"`
	Received []FlowRxStats `json:"received"`
}

// flowOp serves the flow ops of an HCA; ok is false for other ops.
func (n *Node) flowOp(op string, args json.RawMessage) (res any, ok bool, err error) {
	switch op {
	case "flow-start":
		var a FlowArgs
		if err := decodeArgs(args, &a); err != nil {
			return nil, true, err
		}
		res, err = n.startFlow(a)
	case "flow-stop":
		var a FlowStopArgs
		if err := decodeArgs(args, &a); err != nil {
			return nil, true, err
		}
		if a.ID == 0 {
			return nil, true, errors.New("flow-stop: id required")
		}
		res, err = n.ca.StopFlow(a.ID)
	case "flows-start":
		var a FlowsStartArgs
		if err := decodeArgs(args, &a); err != nil {
			return nil, true, err
		}
		res, err = n.startFlows(a)
	case "flows-stop":
		var a FlowsStopArgs
		if err := decodeArgs(args, &a); err != nil {
			return nil, true, err
		}
		res, err = n.stopFlows(a)
	case "flows":
		var a FlowsArgs
		if len(args) > 0 && string(args) != "null" {
			if err := decodeArgs(args, &a); err != nil {
				return nil, true, err
			}
		}
		res, err = n.flows(a)
	case "cca":
		var a CCAArgs
		if len(args) > 0 && string(args) != "null" {
			if err := decodeArgs(args, &a); err != nil {
				return nil, true, err
			}
		}
		res, err = n.cca(a)
	default:
		return nil, false, nil
	}
	if err != nil {
		return nil, true, err
	}
	return res, true, nil
}

func (n *Node) startFlow(a FlowArgs) (FlowStats, error) {
	switch {
	case a.ID == 0:
		return FlowStats{}, errors.New("flow-start: id required (non-zero)")
	case a.PKey != 0 && a.PKeyIndex != 0:
		return FlowStats{}, errors.New("flow-start: pkey and pkey_index both given")
	}
	if a.Port == 0 {
		a.Port = 1
	}
	return n.ca.StartFlow(a.Port, hca.FlowConfig{
		ID: a.ID, DLID: a.DLID, SL: a.SL, Rate: a.RateBPS, Payload: a.Payload, MessageBytes: a.MessageBytes,
		Pattern: a.Pattern, Seed: a.Seed, MaxBacklog: a.MaxBacklog, PKeyIndex: a.PKeyIndex, PKey: mad.PKey(a.PKey),
		Dests: a.Dests, Order: a.Order, Burst: a.Burst, Messages: a.Messages,
	})
}

func (n *Node) startFlows(a FlowsStartArgs) ([]FlowStats, error) {
	out := make([]FlowStats, 0, len(a.Flows))
	for i, f := range a.Flows {
		s, err := n.startFlow(f)
		if err != nil {
			for _, started := range out {
				n.ca.StopFlow(started.ID)
			}
			return nil, fmt.Errorf("flows-start: flow %d of %d (id %d): %w", i+1, len(a.Flows), f.ID, err)
		}
		out = append(out, s)
	}
	return out, nil
}

func (n *Node) stopFlows(a FlowsStopArgs) ([]FlowStats, error) {
	ids := a.IDs
	switch {
	case a.All && len(ids) > 0:
		return nil, errors.New("flows-stop: ids and all both given")
	case a.All:
		for _, f := range n.ca.FlowsSent(false) {
			ids = append(ids, f.ID)
		}
	}
	out := []FlowStats{}
	for _, id := range ids {
		if s, err := n.ca.StopFlow(id); err == nil {
			out = append(out, s)
		}
	}
	return out, nil
}

func (n *Node) flows(a FlowsArgs) (FlowsReport, error) {
	if a.BucketMS < 0 {
		return FlowsReport{}, fmt.Errorf("flows: bucket_ms %v", a.BucketMS)
	}
	if a.BucketMS > 0 {
		if err := n.ca.SetFlowBucket(time.Duration(a.BucketMS * float64(time.Millisecond))); err != nil {
			return FlowsReport{}, err
		}
	}
	return FlowsReport{Sent: n.ca.FlowsSent(a.Reset), Received: n.ca.FlowsReceived(a.Reset)}, nil
}
