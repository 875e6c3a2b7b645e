package harness

import (
	"context"
	"fmt"

	"ibfab/internal/ctl"
	"ibfab/nodeproc"
)

// StartFlow starts flow a on HCA node of fabric (the "flow-start" op) and
// returns it as started: its VL at the sending port, wire bytes per packet
// and mean interval.
func StartFlow(ctx context.Context, fabric, node string, a nodeproc.FlowArgs) (nodeproc.FlowStats, error) {
	var s nodeproc.FlowStats
	err := callNode(ctx, fabric, node, "flow-start", a, &s)
	return s, err
}

// StopFlow stops flow id of HCA node (the "flow-stop" op) and returns its
// sender's final counters.
func StopFlow(ctx context.Context, fabric, node string, id uint32) (nodeproc.FlowStats, error) {
	var s nodeproc.FlowStats
	err := callNode(ctx, fabric, node, "flow-stop", nodeproc.FlowStopArgs{ID: id}, &s)
	return s, err
}

// StartFlows starts several flows of HCA node in one call (the
// "flows-start" op): all of them, or none.
func StartFlows(ctx context.Context, fabric, node string, flows []nodeproc.FlowArgs) ([]nodeproc.FlowStats, error) {
	var s []nodeproc.FlowStats
	err := callNode(ctx, fabric, node, "flows-start", nodeproc.FlowsStartArgs{Flows: flows}, &s)
	return s, err
}

// StopAllFlows stops every flow of HCA node (the "flows-stop" op) and
// returns their final counters.
func StopAllFlows(ctx context.Context, fabric, node string) ([]nodeproc.FlowStats, error) {
	var s []nodeproc.FlowStats
	err := callNode(ctx, fabric, node, "flows-stop", nodeproc.FlowsStopArgs{All: true}, &s)
	return s, err
}

// Flows returns what HCA node sends and receives of flows (the "flows"
// op); a.Reset starts the counts over after reading them.
func Flows(ctx context.Context, fabric, node string, a nodeproc.FlowsArgs) (nodeproc.FlowsReport, error) {
	var r nodeproc.FlowsReport
	err := callNode(ctx, fabric, node, "flows", a, &r)
	return r, err
}

// callNode makes one control call to node of fabric, naming the node and
// op in its error.
func callNode(ctx context.Context, fabric, node, op string, args, result any) error {
	if err := ctl.Call(ctx, nodeproc.SocketPath(fabric, node), op, args, result); err != nil {
		if perr := needProcesses(fabric, op); perr != nil {
			return perr
		}
		return fmt.Errorf("%s %s: %w", node, op, err)
	}
	return nil
}
