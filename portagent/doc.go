// Package portagent connects a node's ports (port) to its
// management agent: Control is the agent's PortControl and Counters its PMA
// Counters, over any node that can look up a port by number. The soft
// switch and the soft HCA share it; what only a node knows (an HCA's source
// LID, a switch's VL arbitration) comes in through Control.OnConfigure.
package portagent
