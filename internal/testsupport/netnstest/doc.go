// Package netnstest helps root tests build throwaway network plumbing:
// named namespaces and veth pairs between them, created through netlink and
// removed in t.Cleanup (also when the test fails), and Do to run code with
// the calling thread inside a namespace (to open sockets there).
//
// Everything a test creates is named with the prefix "ibf-t" and the test
// process's pid (see Name), so a crashed run's leftovers are recognisable
// and never collide with a real fabric's "ibf-<fabric>-" namespaces.
// Not run as root, the helpers skip the test with the reason, or fail it
// where every test must run (testenv).
package netnstest
