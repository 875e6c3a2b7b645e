// Package partition is ibsm's partition manager without the wire: it reads
// a partitions.conf in OpenSM's grammar and computes, for a fabric's end
// ports, the P_Key table each is to hold and the table and enforcement of
// the switch port each CA faces, placing every key where OpenSM's P_Key
// manager (3.3.23, its defaults) would, so that one file gives the same
// tables under either SM, block by block.
//
// # The file (Parse, Load)
//
// A definition is
//
//	[Name][=PKey][,flag[=value]]... : member[,member]... ;
//
// and may span lines after its ':'; several may share a line; '#' starts
// a comment. A member is a port GUID (0x hex, 0 octal, or decimal), ALL,
// ALL_CAS, ALL_SWITCHES, ALL_ROUTERS, SELF (the SM's port) or NONE,
// optionally "=full", "=limited" or "=both"; without one it takes the
// definition's defmember (limited unless the flag says otherwise). As in
// OpenSM, a keyword, a flag or a membership may be abbreviated to any
// prefix ("limi", "ALL_SW"), and "mgid=GID[,flags]" names a multicast
// group and takes the rest of its line. Flags: ipoib, indx0,
// defmember=full|limited|both, and the multicast group flags mtu, rate,
// sl, scope, Q_Key, TClass, FlowLabel (ibsm keeps these but runs no SA:
// they change no table).
//
// What OpenSM refuses is an error here, with the file and line: a
// definition without ':', a P_Key or GUID that is not a number (or 0, or
// does not fit), an empty definition. Where OpenSM goes on, so does Parse,
// with a warning: an unknown flag or flag value (ignored), an unknown
// membership (limited), a definition left open at the end of the file
// (taken). A few inputs OpenSM takes by accident of its C are errors here
// ("ALL=" with an empty membership, which it reads as full; a P_Key above
// 0xffff, which it truncates). OpenSM, given a file with an error, drops
// the whole file and runs as without one; ibsm refuses to start.
//
// # Partitions (Compute)
//
// The Default partition, 0x7fff, always exists: with no file, or an empty
// one, every end port is a full member; with a file every end port is a
// limited member and the SM's own port a full one, and the file may say
// more ("Default=0x7fff : ALL=full ;"). A P_Key's membership bit is
// ignored (0x8010 is partition 0x0010); a definition without one (or with
// 0) joins the partition of its name if there is one, else takes the
// lowest free P_Key from 1 up, in file order. Definitions with the same
// P_Key merge (the first name stays). A port named twice in a partition
// keeps what it was named last; "both" is a full membership (OpenSM's
// allow_both_pkeys is not supported). GUIDs not in the fabric are
// skipped, and a partition left with no member does not exist.
//
// # Tables
//
// Each end port (a CA or router port, a switch's port 0) gets one entry
// per partition it belongs to, with the membership bit for a full member.
// OpenSM keeps P_Key indexes (keep_pkey_indexes): a key whose partition
// the port's table already holds stays at its index, except that index 0
// is the Default partition's (or the indx0 partition's); the other keys go
// after the highest index placed so far, in the order OpenSM walks its
// partitions (by P_Key with its two bytes swapped, as a little-endian host
// keys its map, 0x0100 before 0x0010), and once the table's end is passed,
// into its first free entry. Where a key was placed before is remembered
// across runs (Memory), as OpenSM remembers it while it runs. A table is
// compared and written whole, all its blocks.
//
// With enforcement on (Enforce: in, out or both, OpenSM's part_enforce),
// the switch port cabled to a CA or router port gets that port's keys
// packed from its index 0 in the port's order (a limited key whose full
// key is also there left out), written up to the last block they fill;
// the blocks after it keep what they held, as OpenSM leaves them. A switch
// port whose table cannot hold them all (or exactly fills it: OpenSM's
// bound) enforces nothing. With enforcement off the switch ports' tables
// are not touched and their enforcement is cleared; switch ports cabled to
// switches never enforce.
package partition
