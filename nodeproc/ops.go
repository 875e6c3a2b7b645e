package nodeproc

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"ibfab/agent"
	"ibfab/internal/ctl"
	"ibfab/wire/mad"
)

// op serves one control op with its JSON arguments.
type op func(n *Node, ctx context.Context, args json.RawMessage) (any, error)

// withArgs makes an op of f, which takes the op's arguments decoded into
// an A.
func withArgs[A any](f func(n *Node, ctx context.Context, a A) (any, error)) op {
	return func(n *Node, ctx context.Context, args json.RawMessage) (any, error) {
		var a A
		if err := decodeArgs(args, &a); err != nil {
			return nil, err
		}
		return f(n, ctx, a)
	}
}

// nodeOps are the ops every node serves.
var nodeOps = map[string]op{
	"status": func(n *Node, _ context.Context, _ json.RawMessage) (any, error) { return n.Status(), nil },
	"peers": withArgs(func(n *Node, _ context.Context, a PeersArgs) (any, error) {
		return struct{}{}, n.watchPeers(a)
	}),
	"cable": withArgs(func(n *Node, _ context.Context, a CableArgs) (any, error) {
		return struct{}{}, n.cable(a)
	}),
	"profile": withArgs(func(_ *Node, ctx context.Context, a ProfileArgs) (any, error) {
		return struct{}{}, profile(ctx, a)
	}),
	"stacks": func(*Node, context.Context, json.RawMessage) (any, error) { return goroutineStacks() },
	"drops":  func(n *Node, _ context.Context, args json.RawMessage) (any, error) { return n.dropsOp(args) },
	"shutdown": func(n *Node, _ context.Context, _ json.RawMessage) (any, error) {
		select {
		case <-n.done:
		default:
			close(n.done)
		}
		return struct{}{}, nil
	},
}

// portArgs are the arguments of an op on one port of an HCA.
type portArgs struct {
	Port uint8 `json:"port"`
}

// isSMArgs are the "is-sm" op's arguments.
type isSMArgs struct {
	Port uint8 `json:"port"`
	On   bool  `json:"on"`
}

// madsArgs are the "mads" op's arguments: the MADs received after
// sequence number After, waiting up to WaitMS for one.
type madsArgs struct {
	After  uint64 `json:"after"`
	WaitMS int    `json:"wait_ms"`
}

// caOps are the ops of an HCA besides its flows'.
var caOps = map[string]op{
	"traffic-start": withArgs(func(n *Node, _ context.Context, a TrafficArgs) (any, error) {
		return n.startTraffic(a)
	}),
	"traffic-stop": withArgs(func(n *Node, _ context.Context, a portArgs) (any, error) {
		gs, ok := n.ca.StopTraffic(a.Port)
		if !ok {
			return nil, fmt.Errorf("port %d runs no traffic", a.Port)
		}
		return gs, nil
	}),
	"rx-from": withArgs(func(n *Node, _ context.Context, a RxFromArgs) (any, error) {
		if a.Port == 0 {
			a.Port = 1
		}
		return n.ca.RxFrom(a.Port, a.Reset)
	}),
	"mad": withArgs((*Node).madOp),
	"is-sm": withArgs(func(n *Node, _ context.Context, a isSMArgs) (any, error) {
		return struct{}{}, n.ca.Agent().SetIsSM(a.Port, a.On)
	}),
	"mads": withArgs(func(n *Node, ctx context.Context, a madsArgs) (any, error) {
		out := n.hub.since(ctx, a.After, time.Duration(a.WaitMS)*time.Millisecond)
		if out == nil {
			out = []ReceivedMAD{}
		}
		return out, nil
	}),
}

// handle serves one control request: an op of every node, a switch's, or
// an HCA's (its flows', then the others).
func (n *Node) handle(ctx context.Context, name string, args json.RawMessage) (any, error) {
	if f, ok := nodeOps[name]; ok {
		return f(n, ctx, args)
	}
	if n.sw != nil {
		if res, ok, err := n.switchOp(name, args); ok {
			return res, err
		}
	}
	if n.ca == nil {
		return nil, fmt.Errorf("%w %q (a switch serves status, peers, cable, profile, stacks, drops, switch-config, watch and shutdown)", ctl.ErrUnknownOp, name)
	}
	if res, ok, err := n.flowOp(name, args); ok {
		return res, err
	}
	if f, ok := caOps[name]; ok {
		return f(n, ctx, args)
	}
	return nil, fmt.Errorf("%w %q", ctl.ErrUnknownOp, name)
}

// madOp sends a MAD from the HCA and, unless NoWait, waits up to
// TimeoutMS (default 1 s) for its answer.
func (n *Node) madOp(ctx context.Context, a MADArgs) (any, error) {
	if a.TimeoutMS <= 0 {
		a.TimeoutMS = 1000
	}
	r := agent.Request{Port: a.Port, DLID: a.DLID, SL: a.SL, DestQP: a.QP, MAD: a.MAD}
	if a.NoWait {
		if len(a.MAD) != mad.MADSize {
			return nil, fmt.Errorf("mad: %d bytes, want %d", len(a.MAD), mad.MADSize)
		}
		return struct{}{}, n.ca.SendMAD(r)
	}
	return n.hub.call(ctx, r, time.Duration(a.TimeoutMS)*time.Millisecond, n.ca.SendMAD)
}
