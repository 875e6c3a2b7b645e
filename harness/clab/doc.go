// Package clab exports a fabric for containerlab: one topology file per
// host, every node a container of kind linux running ibswitch or ibhca,
// the links inside a host veth pairs and the links between hosts VXLAN
// tunnels, with the nodes placed on the hosts so that few links cross
// between them (Place). See docs/containerlab.md.
package clab
