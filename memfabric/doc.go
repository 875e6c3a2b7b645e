// Package memfabric is an in-memory fabric of agents built from a
// topology: the management plane of a fabric without its data plane, as
// ibsim is, with emulated time. The subnet manager runs on it (ibsm's
// mem: port, through madport/memport) and the agents and the SM are
// unit-tested on it against the shape a real fabric has, without
// processes, namespaces or sleeping.
//
// Ports and Counters are in-memory implementations of agent.PortControl
// and agent.Counters, kept small since a management plane holds one per
// node: a port's counters are the ten the fabric counts (packets and
// data) until Set gives it others, and Ports log their calls only for a
// test that asks (RecordCalls). NewFabric gives every switch and CA of a
// topologies.Topology an agent with those and a shared manual clock
// (internal/clock.Manual), trains every cabled link, and moves the MADs the
// agents produce along the topology's links: directed-route SMPs by the
// agents' own decisions, LID-routed packets by the switches' LFTs, one hop
// at a time in FIFO order. Send injects a MAD at a node's attach point;
// Received returns what arrived for the SM there.
package memfabric
