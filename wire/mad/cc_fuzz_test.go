package mad_test

import (
	"testing"

	"ibfab/wire/mad"
)

// FuzzCCAttr round-trips the congestion control attributes (CongestionLog
// with its switch and CA events included) and the optional PMA counter
// attributes, the congestion ones too: the first byte picks one.
func FuzzCCAttr(f *testing.F) {
	ssc := mad.SwitchCongestionSettingFields{ControlMap: 0x1f, Threshold: 5, PacketSize: 1, CSThreshold: 3,
		CSReturnDelay: 0x4001, MarkingRate: 0x10}
	ssc.VictimMask[3] = 0x80
	var sp mad.SwitchPortCongestionSettingFields
	sp.Ports[1] = mad.SwitchPortCongestionElement{Valid: true, ControlType: true, Threshold: 7, PacketSize: 2, CongParm: 9}
	ca := mad.CACongestionSettingFields{PortControl: 1, ControlMap: 3}
	ca.Entries[15] = mad.CACongestionEntry{CCTITimer: 300, CCTIIncrease: 2, TriggerThreshold: 3, CCTIMin: 1}
	cct := mad.CongestionControlTableFields{CCTILimit: 2}
	cct.Entries[63] = mad.CCTEntry(3, 0x3fff)
	f.Add(append([]byte{0}, mad.AppendSwitchCongestionSetting(nil, &ssc)...))
	f.Add(append([]byte{1}, mad.AppendSwitchPortCongestionSetting(nil, &sp)...))
	f.Add(append([]byte{2}, mad.AppendCACongestionSetting(nil, &ca)...))
	f.Add(append([]byte{3}, mad.AppendCongestionControlTable(nil, &cct)...))
	f.Add([]byte{4, 0, 1, 2, 3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{8, 0x64, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	swLog := mad.CongestionLogFields{LogType: mad.CongestionLogSwitch, EventsCounter: 2, CurrentTimeStamp: 9}
	swLog.PortMap[31] = 2
	swLog.Switch[0] = mad.CongestionLogSwitchEvent{SLID: 1, DLID: 2, SL: 3, Timestamp: 4}
	caLog := mad.CongestionLogFields{LogType: mad.CongestionLogCA, EventsCounter: 1, EventMap: 8}
	caLog.CA[12] = mad.CongestionLogCAEvent{LocalQP: 0xffffff, RemoteQP: 2, SL: 3, ServiceType: 3, RemoteLID: 5, Timestamp: 6}
	f.Add(append([]byte{6}, mad.AppendCongestionLog(nil, &swLog)...))
	f.Add(append([]byte{6}, mad.AppendCongestionLog(nil, &caLog)...))
	f.Add(append([]byte{16 + 0}, make([]byte, 68)...)) // the congestion PMA attributes follow the 8 others
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		data := in[1:]
		switch in[0] % 32 {
		case 0:
			attrRoundTrip(t, "SwitchCongestionSetting", data, mad.SwitchCongestionSettingSize,
				mad.DecodeSwitchCongestionSetting, mad.AppendSwitchCongestionSetting)
		case 1:
			attrRoundTrip(t, "SwitchPortCongestionSetting", data, mad.SwitchPortCongestionSettingSize,
				mad.DecodeSwitchPortCongestionSetting, mad.AppendSwitchPortCongestionSetting)
		case 2:
			attrRoundTrip(t, "CACongestionSetting", data, mad.CACongestionSettingSize,
				mad.DecodeCACongestionSetting, mad.AppendCACongestionSetting)
		case 3:
			attrRoundTrip(t, "CongestionControlTable", data, mad.CongestionControlTableSize,
				mad.DecodeCongestionControlTable, mad.AppendCongestionControlTable)
		case 4:
			attrRoundTrip(t, "CongestionKeyInfo", data, mad.CongestionKeyInfoSize,
				mad.DecodeCongestionKeyInfo, mad.AppendCongestionKeyInfo)
		case 5:
			attrRoundTrip(t, "CongestionInfo", data, mad.CongestionInfoSize,
				mad.DecodeCongestionInfo, mad.AppendCongestionInfo)
		case 6:
			attrRoundTrip(t, "CongestionLog", data, mad.CongestionLogSize,
				mad.DecodeCongestionLog, mad.AppendCongestionLog)
		case 7:
			if _, err := mad.DecodeCCMAD(data); err == nil {
				_ = mad.MAD(data).AttrID().Name(mad.ClassCongestion)
			}
		case 8, 9, 10, 11, 12, 13, 14, 15:
			attr := mad.AttrPortRcvErrorDetails + mad.AttrID(in[0]%8)
			l := mad.PMAOptionalLayouts[attr]
			attrRoundTrip(t, l.Name, data, l.Size(), l.Decode, l.Append)
		default:
			attr := mad.AttrSwPortVLCongestion + mad.AttrID(in[0]%32-16)%6
			l := mad.PMAOptionalLayouts[attr]
			attrRoundTrip(t, l.Name, data, l.Size(), l.Decode, l.Append)
		}
	})
}
