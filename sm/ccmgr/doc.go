// Package ccmgr is the subnet manager's congestion control manager (IBA
// Annex A10), as OpenSM's: once the subnet is up, every switch gets
// SwitchCongestionSetting and every CA port CACongestionSetting and its
// CongestionControlTable up to CCTI_Limit, from the configuration
// (Settings, OpenSM's cc_* options), by class 0x21 Sets LID-routed to QP1
// with the CC_Key in every MAD. A node is read first, the first time the
// manager meets it (its CongestionKeyInfo, then its settings); after that
// only what differs from what it last read or wrote is sent, which on an
// unchanged subnet is nothing. With cc_key given, a node whose
// CongestionKeyInfo holds another key gets it set; a node that does not
// answer with the key (it holds one the manager does not know, protected)
// is reported and left alone until the next sweep.
// SwitchPortCongestionSetting is written only where a port has an element
// of its own (Valid), which would override the switch-wide settings: the
// file has no per-port options, so the manager clears such elements.
//
// Each sweep, and every Config.LogInterval while the SM watches, the
// manager reads every node's CongestionLog and hands each entry it has
// not seen in the node's last read to Config.OnEvent.
//
// The manager knows nothing of the SM: package sm hands it the nodes a
// sweep found (Node) and the transaction layer it sends through (Sender),
// and holds it behind sm.CongestionManager, as it holds the SA behind
// sm.SubnetAdmin.
package ccmgr
