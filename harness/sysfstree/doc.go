// Package sysfstree writes a running fabric's HCAs to disk as the
// kernel's InfiniBand sysfs class lays them out (/sys/class/infiniband,
// drivers/infiniband/core/sysfs.c): DIR/class/infiniband/<dev>/ with the
// node files (node_type, node_guid, sys_image_guid, node_desc, fw_ver,
// hw_rev, hca_type, board_id) and ports/N/ with state, phys_state, rate,
// lid, lid_mask_count, sm_lid, sm_sl, cap_mask, link_layer, gids/0,
// pkeys/0, counters/ and counters_ext/, in the formats of package ibsysfs.
// Tools that read sysfs then read a soft fabric as they would a host's
// HCAs: node_exporter's infiniband collector with --path.sysfs=DIR,
// ibstatus with DIR/class/infiniband bind-mounted over /sys/class/infiniband
// in a private mount namespace.
//
// <dev> is ibsysfs.DeviceName of the node (its name, with bytes a file
// name or a tool could not carry replaced by '_'); two nodes whose names
// map to one device are an error. Every file is written whole to a
// temporary name beside it and renamed over the old one, so a reader never
// sees half a file; the directories stay (a bind mount of them sees every
// refresh). A refresh writes one status snapshot, file by file: a reader
// that reads while a refresh runs can see two snapshots' files, as one
// reading the kernel's live sysfs can. gids/0 has the default subnet
// prefix fe80::/64, which ibsm keeps; pkeys/N the P_Key table status reports (its non-zero entries from index 0; 0xffff alone when none).
package sysfstree
