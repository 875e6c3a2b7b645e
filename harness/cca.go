package harness

import (
	"context"

	"ibfab/nodeproc"
)

// CCA sets the congestion control of HCA node of fabric (the "cca" op:
// a.Mode "off", "iba" or "drb", a.Cap DRB's cap; a nil Mode only
// reads) and returns its status: mode, cap, counters and every
// destination's CCTI, IPD and open paths.
func CCA(ctx context.Context, fabric, node string, a nodeproc.CCAArgs) (nodeproc.CCAStatus, error) {
	var s nodeproc.CCAStatus
	err := callNode(ctx, fabric, node, "cca", a, &s)
	return s, err
}
