// Package qos is `ibfab run qos`: the QoS experiment on the dumbbell,
// ibsm's QoS (flows mapped to service levels and VL arbitration from its
// --qos-flows file, changed at run time through its control socket)
// against no QoS and against OpenSM's QoS manager, each mode on a fabric
// of its own run by package runner's SuiteRun. It registers itself as
// Experiment in the command's table (package suites).
package qos
