package madfuzz

import (
	"ibfab/wire/mad"
)

// An answer's attribute is compared against a zeroed template: the bytes
// of the data field past the attribute's own length are reserved, which
// the sender sets to zero (IBA 13.4.3). A byte left non-zero there is one
// the agent never wrote for this answer: a reused buffer, or the
// request's own bytes sent back. Only successful GetResps are judged: an
// error answer's data is not defined.

// classAttr names an attribute of a class.
type classAttr struct {
	class mad.MgmtClass
	attr  mad.AttrID
}

// attrSizes are the attributes whose length is shorter than their
// class's data field, by class.
var attrSizes = map[classAttr]int{
	{mad.ClassSubnDirected, mad.AttrNodeInfo}:              mad.NodeInfoSize,
	{mad.ClassSubnDirected, mad.AttrSwitchInfo}:            mad.SwitchInfoSize,
	{mad.ClassSubnDirected, mad.AttrSMInfo}:                mad.SMInfoSize,
	{mad.ClassSubnDirected, mad.AttrSLtoVLMapping}:         mad.SLtoVLMappingTableSize,
	{mad.ClassSubnLID, mad.AttrNodeInfo}:                   mad.NodeInfoSize,
	{mad.ClassSubnLID, mad.AttrSwitchInfo}:                 mad.SwitchInfoSize,
	{mad.ClassSubnLID, mad.AttrSMInfo}:                     mad.SMInfoSize,
	{mad.ClassSubnLID, mad.AttrSLtoVLMapping}:              mad.SLtoVLMappingTableSize,
	{mad.ClassPerfMgt, mad.AttrClassPortInfo}:              mad.ClassPortInfoSize,
	{mad.ClassPerfMgt, mad.AttrPortCounters}:               mad.PortCountersSize,
	{mad.ClassPerfMgt, mad.AttrPortCountersExtended}:       mad.PortCountersExtendedSize,
	{mad.ClassCongestion, mad.AttrClassPortInfo}:           mad.ClassPortInfoSize,
	{mad.ClassCongestion, mad.AttrCongestionInfo}:          mad.CongestionInfoSize,
	{mad.ClassCongestion, mad.AttrCongestionKeyInfo}:       mad.CongestionKeyInfoSize,
	{mad.ClassCongestion, mad.AttrSwitchCongestionSetting}: mad.SwitchCongestionSettingSize,
}

// dirtyTail judges answer m: judged is false for an answer it cannot
// judge (not a successful GetResp, an attribute of no known length);
// dirty reports a non-zero byte past the attribute's length, at offset
// at in the MAD.
func dirtyTail(m []byte) (at int, judged, dirty bool) {
	if len(m) < mad.MADSize {
		return 0, false, false
	}
	h := mad.MAD(m)
	if h.Method() != mad.MethodGetResp {
		return 0, false, false
	}
	size, ok := attrSizes[classAttr{h.MgmtClass(), h.AttrID()}]
	if !ok {
		return 0, false, false
	}
	data, status := answerStatus(m)
	if data == nil || status != 0 {
		return 0, false, false
	}
	start := cap(m) - cap(data) // data is a slice of m: where it starts in m
	for i, b := range data[size:] {
		if b != 0 {
			return start + size + i, true, true
		}
	}
	return 0, true, false
}

// answerStatus is answer m's status (a directed-route SMP's without the
// D bit) and its data field by its class, nil for classes whose data
// dirtyTail does not judge.
func answerStatus(m []byte) ([]byte, mad.Status) {
	switch c := mad.MAD(m).MgmtClass(); c {
	case mad.ClassSubnDirected:
		return mad.DRSMP(m).Data(), mad.DRSMP(m).Status()
	case mad.ClassSubnLID:
		return mad.SMP(m).Data(), mad.MAD(m).Status()
	case mad.ClassPerfMgt:
		return mad.PMA(m).Data(), mad.MAD(m).Status()
	case mad.ClassCongestion:
		return mad.CCMAD(m).Data(), mad.MAD(m).Status()
	}
	return nil, mad.MAD(m).Status()
}
