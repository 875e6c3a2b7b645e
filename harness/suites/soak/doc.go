// Package soak is `ibfab run soak` (issue 36 part 3): the default fabric
// under steady traffic, ibsm Master and OpenSM its Standby, while the
// harness keeps disturbing it (link flaps, switch kills and restarts, SM
// kills with a takeover and a handover back, partition and QoS changes,
// SMP loss) at times and targets drawn from a seed (Schedule). After each
// disturbance the fabric must settle within the kind's Bound, drop data
// only at the links it took down, and at the end no process, namespace,
// file descriptor or harness goroutine may be left over and no process's
// memory may grow. It runs the SMs through package runner and registers
// itself as Experiment in the command's table (package suites).
package soak
