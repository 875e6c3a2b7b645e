// Package nodeproc is the body of the node processes, ibswitch and ibhca:
// one soft switch or soft HCA of a fabric, its ports on the veth ends p1..pN
// of the network namespace it runs in, and the control socket the harness
// talks to (package ctl). The harness starts each process inside its
// node's namespace; the process itself never changes namespace.
//
// The status a node reports (Status) is the per-node part of `ibfab status
// --json`: fields may be added, never renamed.
package nodeproc
