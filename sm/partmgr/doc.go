// Package partmgr is the subnet manager's partition manager, as OpenSM's
// P_Key manager: every end port (CA and router ports, switch port 0)
// gets the P_Keys of the partitions a partitions.conf (package
// sm/partition) gives it, placed where OpenSM would place them, and with
// enforcement on, the switch port cabled to a CA or router port gets
// that port's keys and PartitionEnforcementInbound/Outbound; switch ports
// cabled to switches have their enforcement cleared. A port's table is
// read, all its blocks, the first time the manager meets the port; after
// that the manager keeps a shadow of what the port holds (what it read,
// and what its Sets' answers said) and sends only the blocks that
// differ, which on an unchanged subnet is nothing. A device that leaves,
// or is reset, is forgotten (Forget), and read again when it comes back.
//
// The manager knows nothing of the SM: package sm hands it the ports a
// sweep found (View), the transaction layer it sends through (Sender),
// and the PortInfo the SM keeps of every port (PortInfos), which the
// enforcement bits are part of and which the SM sets with its M_Key
// fields; sm holds it behind sm.PartitionManager. The SM runs it after
// distribution, before activation, in a sweep (ports come up
// partitioned, as under OpenSM), and after the change is installed in an
// assimilation.
package partmgr
