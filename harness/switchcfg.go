package harness

import (
	"context"

	"ibfab/nodeproc"
)

// SwitchConfig changes switch node of fabric at run time (the
// "switch-config" op: per-VL receive buffers of every port, the
// architecture "voq" or "iq", a reset of the ports' downstream views;
// what a is not given stays) and returns the switch's configuration then,
// with the adaptive routing the subnet manager set. An empty a only reads.
//
// Buffers changed at run time are advertised to the neighbours at once,
// whose downstream views follow by themselves; a switch's peers that are
// HCAs keep the buffers their --vl-blocks gave them.
func SwitchConfig(ctx context.Context, fabric, node string, a nodeproc.SwitchConfigArgs) (nodeproc.SwitchConfigStatus, error) {
	var s nodeproc.SwitchConfigStatus
	err := callNode(ctx, fabric, node, "switch-config", a, &s)
	return s, err
}

// Watch makes switch node of fabric count the data packets it receives
// for the DLIDs lids, per input port and VL (status: each port's
// credits[vl].watched), from zero; no lids stops watching. It returns the
// DLIDs watched.
func Watch(ctx context.Context, fabric, node string, lids []uint16) ([]uint16, error) {
	var w nodeproc.WatchArgs
	err := callNode(ctx, fabric, node, "watch", nodeproc.WatchArgs{LIDs: lids}, &w)
	return w.LIDs, err
}

// NodeState returns the status of one node of fabric (the "status" op),
// as the nodes of Status carry it but without the cabling: for polling
// one switch's counters cheaply.
func NodeState(ctx context.Context, fabric, node string) (nodeproc.Status, error) {
	var s nodeproc.Status
	err := callNode(ctx, fabric, node, "status", nil, &s)
	return s, err
}
