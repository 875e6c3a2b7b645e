package madfuzz

import (
	"context"
	"errors"
	"fmt"
	"time"

	"ibfab/harness"
	"ibfab/nodeproc"
	"ibfab/topologies"
)

// Bystanders are HCAs the fuzzer neither sends from nor aims at: each
// sends a light flow to the next for the whole run, and every packet must
// arrive. A MAD that broke a switch's tables, a port or a process on
// their paths shows as packets lost.

// BystanderFlow is one bystander's flow, as its two ends counted it.
type BystanderFlow struct {
	From     string `json:"from"`
	To       string `json:"to"`
	Sent     uint64 `json:"sent"`
	Received uint64 `json:"received"`
	// Refused are packets the source's port would not send (not Active,
	// SL unmapped) or its backlog dropped: lost before the wire.
	Refused uint64 `json:"refused"`
}

// Lost is what the flow sent, or would have, that did not arrive.
func (b BystanderFlow) Lost() uint64 { return b.Sent + b.Refused - min(b.Received, b.Sent) }

const (
	bystanderIDBase  = 0x6fab_0000
	bystanderPayload = 256
	// bystanderRate is about 1,000 packets a second: light enough for
	// the fuzz to keep its pace on two cores, steady enough that an
	// outage of milliseconds loses packets.
	bystanderRate = 1000 * (bystanderPayload + 36) * 8
	// bystanderDrain bounds the wait for the last packets in flight.
	bystanderDrain = 2 * time.Second
)

type bystander struct {
	from, to string
	id       uint32
	slid     uint16
}

// bystanders picks the HCAs outside exclude (node indices) that have a
// LID, in topology order, each paired with the next (the last with the
// first); fewer than two is an error, as nothing could be checked.
func bystanders(t *topologies.Topology, exclude map[int]bool, lids []uint16) ([]bystander, error) {
	var hosts []int
	for i, n := range t.Nodes() {
		if n.Type == topologies.CA && !exclude[i] && lids[i] != 0 {
			hosts = append(hosts, i)
		}
	}
	if len(hosts) < 2 {
		return nil, fmt.Errorf("bystander traffic needs two HCAs with LIDs that are neither fuzzed nor fuzzing, the fabric has %d", len(hosts))
	}
	out := make([]bystander, len(hosts))
	for k, h := range hosts {
		out[k] = bystander{from: t.Node(h).Name, to: t.Node(hosts[(k+1)%len(hosts)]).Name, id: bystanderIDBase + uint32(k), slid: lids[h]}
	}
	return out, nil
}

// startBystanderFlows starts the flows among the HCAs of t that are
// neither from nor targeted (every node when targets is empty); l are
// the nodes' LIDs.
func startBystanderFlows(ctx context.Context, fabric string, t *topologies.Topology, from int, targets []int, l []uint16) ([]bystander, error) {
	if len(targets) == 0 {
		return nil, errors.New("bystander traffic needs targets that leave HCAs out: every node is fuzzed")
	}
	exclude := map[int]bool{from: true}
	for _, n := range targets {
		exclude[n] = true
	}
	bs, err := bystanders(t, exclude, l)
	if err != nil {
		return nil, err
	}
	lidOf := map[string]uint16{}
	for i, n := range t.Nodes() {
		lidOf[n.Name] = l[i]
	}
	return bs, startBystanders(ctx, fabric, bs, lidOf)
}

// startBystanders starts every bystander's flow; on an error the ones
// started are stopped.
func startBystanders(ctx context.Context, fabric string, bs []bystander, lidOf map[string]uint16) error {
	for k, b := range bs {
		_, err := harness.StartFlow(ctx, fabric, b.from, nodeproc.FlowArgs{ID: b.id, DLID: lidOf[b.to],
			RateBPS: bystanderRate, Payload: bystanderPayload, MaxBacklog: 1024})
		if err != nil {
			_, _ = stopBystanders(ctx, fabric, bs[:k])
			return fmt.Errorf("bystander flow %s -> %s: %w", b.from, b.to, err)
		}
	}
	return nil
}

// stopBystanders stops the flows and counts what arrived, waiting up to
// bystanderDrain for packets still on their way.
func stopBystanders(ctx context.Context, fabric string, bs []bystander) ([]BystanderFlow, error) {
	var out []BystanderFlow
	var stopped []bystander // out's flows, index for index
	var errs []error
	for _, b := range bs {
		st, err := harness.StopFlow(ctx, fabric, b.from, b.id)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", b.from, err))
			continue
		}
		out = append(out, BystanderFlow{From: b.from, To: b.to, Sent: st.Sent, Refused: st.Failed + st.Dropped})
		stopped = append(stopped, b)
	}
	deadline := time.Now().Add(bystanderDrain)
	for k, b := range stopped {
		for {
			got, err := received(ctx, fabric, b)
			if err != nil {
				errs = append(errs, err)
				break
			}
			out[k].Received = got
			if got >= out[k].Sent || time.Now().After(deadline) {
				break
			}
			select {
			case <-time.After(50 * time.Millisecond):
			case <-ctx.Done():
				return out, ctx.Err()
			}
		}
	}
	return out, errors.Join(errs...)
}

// received is how many packets of bystander b's flow its destination got.
func received(ctx context.Context, fabric string, b bystander) (uint64, error) {
	rep, err := harness.Flows(ctx, fabric, b.to, nodeproc.FlowsArgs{})
	if err != nil {
		return 0, fmt.Errorf("%s: %w", b.to, err)
	}
	for _, r := range rep.Received {
		if r.SLID == b.slid && r.ID == b.id {
			return r.Packets, nil
		}
	}
	return 0, nil
}
