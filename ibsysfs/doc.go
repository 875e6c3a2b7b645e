// Package ibsysfs renders the files of the kernel's InfiniBand sysfs class
// (/sys/class/infiniband/<dev>/, drivers/infiniband/core/sysfs.c) from
// plain values: the node files, each port's attributes, and its counters
// and counters_ext directories. Both the umad endpoint's tree (umadep),
// which libibumad reads over the shim, and the tree `ibfab sysfs` writes
// to disk for node_exporter, ibstatus and the like, use it, so that the
// two say the same thing in the same format.
//
// The formats follow the kernel's show functions: states as "N: NAME"
// ("4: ACTIVE", "5: LinkUp"), the rate as the nominal signalling rate with
// width and speed ("10 Gb/sec (4X SDR)", "400 Gb/sec (4X NDR)"), LIDs in
// hex with 0x, the capability mask as 0x and eight hex digits, GUIDs as
// four groups of four hex digits, counters in decimal. PortXmitData and
// PortRcvData are in 4-byte words, as the PMA counts them and the kernel
// shows them; readers multiply by 4 for bytes.
package ibsysfs
