// Package routingtest holds what the tests of the routing engines share:
// the fabrics they route (the thesis's network, meshes and tori, a copy
// without one link), running an engine by name, and following a packet
// through the forwarding tables to check that routes are minimal. It is
// imported by tests only.
package routingtest
