package agent_test

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/agent"
	"ibfab/wire/mad"
)

// optCounters adds the optional counters to the fake: every attribute
// counts 7 in each counter.
type optCounters struct{ agent.Counters }

func (optCounters) OptionalCounters(uint8, mad.AttrID, uint8) (c [mad.PMAMaxCounters]uint64, ok bool) {
	for i := range c {
		c[i] = 7
	}
	return c, true
}

func (optCounters) ResetOptionalCounters(uint8, mad.AttrID, uint8, uint16) {}

// TestPMACapMask: ClassPortInfo.CapabilityMask says exactly what the PMA
// serves: every attribute is asked for, and the capability bits that
// belong to an attribute are set exactly when it is answered.
func TestPMACapMask(t *testing.T) {
	for _, opt := range []bool{false, true} {
		nd := newNode(t, mad.NodeTypeSwitch, 4, func(c *agent.Config) {
			if opt {
				c.Counters = optCounters{c.Counters}
			}
		})
		get := func(attr mad.AttrID) mad.PMA {
			return mad.PMA(one(t, nd.a.HandleMAD(gmp(pma(mad.MethodGet, attr, []byte{0, 1})))).MAD)
		}
		cpi := get(mad.AttrClassPortInfo)
		require.Equal(t, mad.StatusOK, cpi.MAD().Status())
		capMask := binary.BigEndian.Uint16(cpi.Data()[2:])
		served := map[mad.AttrID]bool{}
		for attr := mad.AttrID(0x10); attr < 0x40; attr++ {
			served[attr] = get(attr).MAD().Status() == mad.StatusOK
		}
		assert.Equal(t, served[mad.AttrPortCountersExtended], capMask&(1<<9) != 0, "ExtWidth bit, opt %v", opt)
		assert.Equal(t, served[mad.AttrPortCounters], capMask&(1<<12) != 0, "PortXmitWait bit")
		assert.NotZero(t, capMask&(1<<8), "AllPortSelect")
		assert.Zero(t, capMask&^(1<<8|1<<9|1<<12), "no other bit")
		for attr := range mad.PMAOptionalLayouts {
			assert.Equal(t, opt, served[attr], "%v", attr.Name(mad.ClassPerfMgt))
		}
		if opt {
			d := mad.PMAOptionalLayouts[mad.AttrPortVLOpPackets].Fields(get(mad.AttrPortVLOpPackets).Data())
			assert.EqualValues(t, 7, d.Counters[15])
		}
	}
}

// ccMAD builds a CC MAD with key.
func ccMAD(m mad.Method, attr mad.AttrID, mod uint32, key uint64, data []byte) []byte {
	f := mad.CCMADFields{Method: m, TransactionID: 0x99, AttrID: attr, AttrModifier: mod, CCKey: key}
	copy(f.Data[:], data)
	return mad.AppendCCMAD(nil, &f)
}

// TestCCStoredValues: Sets are stored and read back; switch-only and
// CA-only attributes are refused at the other kind of node; a bad block
// is an invalid field; a wrong CC_Key is dropped and counted.
func TestCCStoredValues(t *testing.T) {
	ca := newNode(t, mad.NodeTypeCA, 2)
	sw := newNode(t, mad.NodeTypeSwitch, 4)
	do := func(nd *node, b []byte) mad.CCMAD {
		return mad.CCMAD(one(t, nd.a.HandleMAD(gmp(b))).MAD)
	}
	cct := mad.CongestionControlTableFields{CCTILimit: 65}
	cct.Entries[1] = mad.CCTEntry(1, 300)
	blk := mad.AppendCongestionControlTable(nil, &cct)
	r := do(ca, ccMAD(mad.MethodSet, mad.AttrCongestionControlTable, 1, 0, blk))
	require.Equal(t, mad.StatusOK, r.MAD().Status())
	r = do(ca, ccMAD(mad.MethodGet, mad.AttrCongestionControlTable, 1, 0, nil))
	assert.Equal(t, cct, mad.CongestionControlTable(r.Data()).Fields())
	assert.Equal(t, mad.StatusInvalidField, do(ca, ccMAD(mad.MethodGet, mad.AttrCongestionControlTable, 2, 0, nil)).MAD().Status())
	assert.Equal(t, mad.StatusMethodAttrUnsupported, do(sw, ccMAD(mad.MethodGet, mad.AttrCongestionControlTable, 0, 0, nil)).MAD().Status())
	assert.Equal(t, mad.StatusMethodAttrUnsupported, do(ca, ccMAD(mad.MethodGet, mad.AttrSwitchCongestionSetting, 0, 0, nil)).MAD().Status())
	v1 := ccMAD(mad.MethodGet, mad.AttrCongestionInfo, 0, 0, nil)
	v1[2] = 1 // class version 1
	assert.Equal(t, mad.StatusBadVersion, do(ca, v1).MAD().Status())

	ssc := mad.SwitchCongestionSettingFields{ControlMap: mad.SwitchCongThreshold, Threshold: 9, PacketSize: 3, MarkingRate: 44}
	do(sw, ccMAD(mad.MethodSet, mad.AttrSwitchCongestionSetting, 0, 0, mad.AppendSwitchCongestionSetting(nil, &ssc)))
	got := mad.SwitchCongestionSetting(do(sw, ccMAD(mad.MethodGet, mad.AttrSwitchCongestionSetting, 0, 0, nil)).Data()).Fields()
	assert.EqualValues(t, 9, got.Threshold)
	assert.Zero(t, got.MarkingRate, "Marking_Rate not in Control_Map")

	key := mad.CongestionKeyInfoFields{CCKey: 0xabc, ProtectBit: true}
	do(sw, ccMAD(mad.MethodSet, mad.AttrCongestionKeyInfo, 0, 0, mad.AppendCongestionKeyInfo(nil, &key)))
	assert.Empty(t, sw.a.HandleMAD(gmp(ccMAD(mad.MethodGet, mad.AttrCongestionInfo, 0, 0x1, nil))), "wrong CC_Key answered")
	assert.EqualValues(t, 1, sw.a.Stats().CCKeyViolations)
	r = do(sw, ccMAD(mad.MethodGet, mad.AttrCongestionKeyInfo, 0, 0xabc, nil))
	assert.EqualValues(t, 1, mad.CongestionKeyInfo(r.Data()).Fields().Violations)
}
