// Package interop holds the standing interoperability suite: unmodified
// Debian OpenSM and infiniband-diags against a real soft fabric (processes
// in namespaces, frames on veth pairs), each test asserting on what the
// tools print or log and on what the fabric counted, for every feature a
// user of those tools exercises (QoS, partitions, M_Key, SM election and
// handover, congestion control, counters, port state changes). Where a
// result can be compared with Debian's ibsim on the same topology file,
// the test does.
//
// The package has no code of its own: it exists for its tests, which need
// root (namespaces, veth) and the Debian packages `make test` installs.
package interop
