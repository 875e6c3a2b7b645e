// Package agenttest provides fakes for the agent package's seams and an
// in-memory fabric of agents built from a topology, so that the agents —
// and later the subnet manager — can be unit-tested against the same shape
// a real fabric has, without processes, namespaces or sleeping.
//
// FakePorts and FakeCounters implement agent.PortControl and
// agent.Counters. NewFabric gives every switch and CA of a
// topologies.Topology an agent with those fakes and a shared manual clock
// (internal/clock.Manual), trains every cabled link, and moves the MADs the
// agents produce along the topology's links: directed-route SMPs by the
// agents' own decisions, LID-routed packets by the switches' LFTs, one hop
// at a time in FIFO order. Send injects a MAD at a node's attach point;
// Received returns what arrived for the SM there.
package agenttest
