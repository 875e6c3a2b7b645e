package sm

import "encoding/binary"

// CongestionLog's event entries (IBA A10.4.3.5, OpenSM's ib_cong_log_t),
// read from the 224 bytes of log and management data a CongestionLog
// answer carries. package wire/mad has the log's head only; these views
// read the rest.
//
//	switch: head (4), CurrentTimeStamp (4), PortMap (32), then 15 entries:
//	  byte 0 SLID (16) | 2 DLID (16) | 4 SL (4) reserved (28) | 8 TimeStamp (32)
//	CA: head (4), EventMap (2), reserved (2), CurrentTimeStamp (4), then 13:
//	  byte 0 LocalQP (24) reserved (8) | 4 RemoteQP (24) SL (4) ServiceType (4)
//	  | 8 RemoteLID (16) reserved (16) | 12 TimeStamp (32)
const (
	clPortMap        = 8
	clPortMapSize    = 32
	clSwitchEntries  = 40
	clSwitchEntry    = 12
	clSwitchMax      = 15
	cleSLID          = 0
	cleDLID          = 2
	cleSL            = 4
	cleSwitchTime    = 8
	clCAEntries      = 12
	clCAEntry        = 16
	clCAMax          = 13
	cleLocalQP       = 0
	cleRemoteQP      = 4
	cleSLService     = 7
	cleRemoteLID     = 8
	cleCATime        = 12
	clLogSize        = 224
	clLogTypeSwitch  = 1
	clLogTypeCA      = 2
	clLogTypeOffset  = 0
	clCountOffset    = 2
	clSwitchNowStamp = 4
	clCANowStamp     = 8
)

// ccLogEntry is one event of a CongestionLog, switch or CA form.
type ccLogEntry struct {
	SLID, DLID  uint16 // switch
	SL          uint8
	LocalQP     uint32 // CA
	RemoteQP    uint32
	ServiceType uint8
	RemoteLID   uint16
	Time        uint32
}

// ccLog is a decoded CongestionLog: its type, events counter, the time
// it was read, the switch's port map (ports with events), and its
// non-empty entries.
type ccLog struct {
	Type    uint8
	Counter uint16
	Now     uint32
	Ports   []int
	Entries []ccLogEntry
}

// decodeCCLog reads a CongestionLog from its 224 bytes; nil when b is
// shorter or the log type is neither switch nor CA.
func decodeCCLog(b []byte) *ccLog {
	if len(b) < clLogSize {
		return nil
	}
	be := binary.BigEndian
	l := &ccLog{Type: b[clLogTypeOffset], Counter: be.Uint16(b[clCountOffset:])}
	switch l.Type {
	case clLogTypeSwitch:
		l.Now = be.Uint32(b[clSwitchNowStamp:])
		for p := range clPortMapSize * 8 {
			if b[clPortMap+clPortMapSize-1-p/8]&(1<<(p%8)) != 0 {
				l.Ports = append(l.Ports, p)
			}
		}
		for i := range clSwitchMax {
			e := b[clSwitchEntries+i*clSwitchEntry:]
			x := ccLogEntry{SLID: be.Uint16(e[cleSLID:]), DLID: be.Uint16(e[cleDLID:]), SL: e[cleSL] >> 4,
				Time: be.Uint32(e[cleSwitchTime:])}
			if x != (ccLogEntry{}) {
				l.Entries = append(l.Entries, x)
			}
		}
	case clLogTypeCA:
		l.Now = be.Uint32(b[clCANowStamp:])
		for i := range clCAMax {
			e := b[clCAEntries+i*clCAEntry:]
			x := ccLogEntry{LocalQP: be.Uint32(e[cleLocalQP:]) >> 8, RemoteQP: be.Uint32(e[cleRemoteQP:]) >> 8,
				SL: e[cleSLService] >> 4, ServiceType: e[cleSLService] & 0xf, RemoteLID: be.Uint16(e[cleRemoteLID:]),
				Time: be.Uint32(e[cleCATime:])}
			if x != (ccLogEntry{}) {
				l.Entries = append(l.Entries, x)
			}
		}
	default:
		return nil
	}
	return l
}
