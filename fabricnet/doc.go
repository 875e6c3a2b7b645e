// Package fabricnet creates and removes the kernel side of a soft fabric:
// one network namespace per node, named ibf-<fabric>-<node>, and one veth
// pair per link whose ends live in the two nodes' namespaces, named p<port>.
// CreateOnHosts spreads a fabric over host namespaces (ibf-<fabric>--host<N>)
// joined by underlay veths, the links between hosts VXLAN devices moved into
// the nodes' namespaces under the same names p<port>.
// Everything goes through netlink (vishvananda/netlink and netns); nothing
// shells out to ip(8).
//
// Names are the contract with the rest of the harness and with users
// (`ip netns list` shows the fabric): a fabric name has no '-', so the prefix
// ibf-<fabric>- belongs to one fabric only, and Remove can clean up a fabric
// whose harness crashed before recording anything.
package fabricnet
