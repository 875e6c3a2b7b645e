package ccmgr

import "ibfab/wire/mad"

// CongestionLog's events as the CC manager keeps them: the log's
// layout (IBA A10.4.3.5) is wire/mad's.

// logEntry is one event of a CongestionLog, switch or CA form.
type logEntry struct {
	SLID, DLID  uint16 // switch
	SL          uint8
	LocalQP     uint32 // CA
	RemoteQP    uint32
	ServiceType uint8
	RemoteLID   uint16
	Time        uint32
}

// congestionLog is a decoded CongestionLog: its events counter, the time
// it was read, the switch's port map (ports with events), and its
// non-empty entries.
type congestionLog struct {
	Counter uint16
	Now     uint32
	Ports   []int
	Entries []logEntry
}

// decodeLog reads a CongestionLog's answer; nil when b is short or the
// log type is neither switch nor CA. Empty entries (all zero) are left
// out.
func decodeLog(b []byte) *congestionLog {
	f, err := mad.DecodeCongestionLog(b)
	if err != nil {
		return nil
	}
	l := &congestionLog{Counter: f.EventsCounter, Now: f.CurrentTimeStamp}
	switch f.LogType {
	case mad.CongestionLogSwitch:
		for p := range mad.PortMaskSize * 8 {
			if f.PortMap[mad.PortMaskSize-1-p/8]&(1<<(p%8)) != 0 {
				l.Ports = append(l.Ports, p)
			}
		}
		for _, e := range f.Switch {
			x := logEntry{SLID: e.SLID, DLID: e.DLID, SL: e.SL, Time: e.Timestamp}
			if x != (logEntry{}) {
				l.Entries = append(l.Entries, x)
			}
		}
	case mad.CongestionLogCA:
		for _, e := range f.CA {
			x := logEntry{LocalQP: e.LocalQP, RemoteQP: e.RemoteQP, SL: e.SL, ServiceType: e.ServiceType,
				RemoteLID: e.RemoteLID, Time: e.Timestamp}
			if x != (logEntry{}) {
				l.Entries = append(l.Entries, x)
			}
		}
	default:
		return nil
	}
	return l
}
