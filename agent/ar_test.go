package agent_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/agent"
	"ibfab/wire/mad"
)

// arMAD builds an adaptive routing MAD.
func arMAD(m mad.Method, attr mad.AttrID, mod uint32, data []byte) []byte {
	f := mad.ARMADFields{Method: m, TransactionID: 0xa7, AttrID: attr, AttrModifier: mod}
	copy(f.Data[:], data)
	return mad.AppendARMAD(nil, &f)
}

// doAR sends b to nd as a GMP and returns the answer.
func doAR(t *testing.T, nd *node, b []byte) mad.ARMAD {
	t.Helper()
	o := one(t, nd.a.HandleMAD(gmp(b)))
	require.False(t, o.Local, "answered by the agent")
	r := mad.ARMAD(o.MAD)
	require.Equal(t, mad.MethodGetResp, r.MAD().Method())
	require.Equal(t, mad.MAD(b).TransactionID(), r.MAD().TransactionID())
	return r
}

func arInfoData(f mad.ARInfoFields) []byte { return mad.AppendARInfo(nil, &f) }

func arGroups(first map[int][]uint8) []byte {
	var f mad.ARGroupTableFields
	for i, ports := range first {
		f.Groups[i] = mad.PortMaskOf(ports...)
	}
	return mad.AppendARGroupTable(nil, &f)
}

func arLIDs(groups map[int]uint16) []byte {
	var f mad.ARLIDTableFields
	for i, g := range groups {
		f.Groups[i] = g
	}
	return mad.AppendARLIDTable(nil, &f)
}

// TestARStatus: what a switch (4 ports, 8 data VLs, LFT of 128 LIDs, 10
// groups) answers each kind of request, and the counter the error lands
// in.
func TestARStatus(t *testing.T) {
	good := mad.ARInfoFields{Enable: true, Mode: mad.ARAFI, Threshold: 75, AFCVL: 3, GroupTop: 1}
	with := func(f func(*mad.ARInfoFields)) []byte {
		g := good
		f(&g)
		return arInfoData(g)
	}
	badVersion := arMAD(mad.MethodGet, mad.AttrARInfo, 0, nil)
	badVersion[2] = 2
	tests := []struct {
		name string
		req  []byte
		want mad.Status
	}{
		{"Get ARInfo", arMAD(mad.MethodGet, mad.AttrARInfo, 0, nil), mad.StatusOK},
		{"Set ARInfo", arMAD(mad.MethodSet, mad.AttrARInfo, 0, arInfoData(good)), mad.StatusOK},
		{"Get ClassPortInfo", arMAD(mad.MethodGet, mad.AttrClassPortInfo, 0, nil), mad.StatusOK},
		{"Set ClassPortInfo", arMAD(mad.MethodSet, mad.AttrClassPortInfo, 0, nil), mad.StatusMethodAttrUnsupported},
		{"unknown attribute", arMAD(mad.MethodGet, 0x0013, 0, nil), mad.StatusMethodAttrUnsupported},
		{"GetTable", arMAD(mad.MethodGetTable, mad.AttrARInfo, 0, nil), mad.StatusMethodUnsupported},
		{"class version 2", badVersion, mad.StatusBadVersion},
		{"ARInfo modifier 1", arMAD(mad.MethodGet, mad.AttrARInfo, 1, nil), mad.StatusInvalidField},
		{"mode 4", arMAD(mad.MethodSet, mad.AttrARInfo, 0, with(func(f *mad.ARInfoFields) { f.Mode = 4 })), mad.StatusInvalidField},
		{"threshold 0", arMAD(mad.MethodSet, mad.AttrARInfo, 0, with(func(f *mad.ARInfoFields) { f.Threshold = 0 })), mad.StatusInvalidField},
		{"threshold 101", arMAD(mad.MethodSet, mad.AttrARInfo, 0, with(func(f *mad.ARInfoFields) { f.Threshold = 101 })), mad.StatusInvalidField},
		{"threshold 100", arMAD(mad.MethodSet, mad.AttrARInfo, 0, with(func(f *mad.ARInfoFields) { f.Threshold = 100 })), mad.StatusOK},
		{"AFC VL 7", arMAD(mad.MethodSet, mad.AttrARInfo, 0, with(func(f *mad.ARInfoFields) { f.AFCVL = 7 })), mad.StatusOK},
		{"AFC VL 8", arMAD(mad.MethodSet, mad.AttrARInfo, 0, with(func(f *mad.ARInfoFields) { f.AFCVL = 8 })), mad.StatusInvalidField},
		{"group top 9", arMAD(mad.MethodSet, mad.AttrARInfo, 0, with(func(f *mad.ARInfoFields) { f.GroupTop = 9 })), mad.StatusOK},
		{"group top 10", arMAD(mad.MethodSet, mad.AttrARInfo, 0, with(func(f *mad.ARInfoFields) { f.GroupTop = 10 })), mad.StatusInvalidField},
		{"groups 1-2", arMAD(mad.MethodSet, mad.AttrARGroupTable, 0, arGroups(map[int][]uint8{1: {1, 4}, 2: {2}})), mad.StatusOK},
		{"group 0 is ignored", arMAD(mad.MethodSet, mad.AttrARGroupTable, 0, arGroups(map[int][]uint8{0: {0, 200}})), mad.StatusOK},
		{"port 5 of 4", arMAD(mad.MethodSet, mad.AttrARGroupTable, 0, arGroups(map[int][]uint8{1: {5}})), mad.StatusInvalidField},
		{"port 0", arMAD(mad.MethodSet, mad.AttrARGroupTable, 0, arGroups(map[int][]uint8{3: {0, 1}})), mad.StatusInvalidField},
		{"group block 1 (groups 7-13)", arMAD(mad.MethodSet, mad.AttrARGroupTable, 1, arGroups(map[int][]uint8{2: {1}})), mad.StatusOK},
		{"group 10 of 10", arMAD(mad.MethodSet, mad.AttrARGroupTable, 1, arGroups(map[int][]uint8{3: {1}})), mad.StatusInvalidField},
		{"group 10 empty", arMAD(mad.MethodSet, mad.AttrARGroupTable, 1, arGroups(map[int][]uint8{3: nil})), mad.StatusOK},
		{"group block 2", arMAD(mad.MethodGet, mad.AttrARGroupTable, 2, nil), mad.StatusInvalidField},
		{"LID block 1", arMAD(mad.MethodSet, mad.AttrARLIDTable, 1, arLIDs(map[int]uint16{0: 1, 63: 9})), mad.StatusOK},
		{"LID group 10", arMAD(mad.MethodSet, mad.AttrARLIDTable, 0, arLIDs(map[int]uint16{5: 10})), mad.StatusInvalidField},
		{"LID block 2 of 128 LIDs", arMAD(mad.MethodGet, mad.AttrARLIDTable, 2, nil), mad.StatusInvalidField},
	}
	counter := map[mad.Status]func(agent.Stats) uint64{
		mad.StatusBadVersion:            func(s agent.Stats) uint64 { return s.BadVersion },
		mad.StatusMethodUnsupported:     func(s agent.Stats) uint64 { return s.MethodUnsupported },
		mad.StatusMethodAttrUnsupported: func(s agent.Stats) uint64 { return s.MethodAttrUnsupport },
		mad.StatusInvalidField:          func(s agent.Stats) uint64 { return s.InvalidField },
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nd := newNode(t, mad.NodeTypeSwitch, 4, func(c *agent.Config) {
				c.LinearFDBCap, c.ARGroupCap = 128, 10
			})
			before := nd.a.Stats()
			r := doAR(t, nd, tt.req)
			assert.Equal(t, tt.want, r.MAD().Status())
			after := nd.a.Stats()
			assert.Equal(t, before.ARRequests+1, after.ARRequests, "ar_requests")
			if tt.want != mad.StatusOK {
				c := counter[tt.want]
				assert.Equal(t, c(before)+1, c(after), "status counter")
				assert.Equal(t, before.ARUpdates, after.ARUpdates, "no update")
				assert.Equal(t, mad.AROff, nd.a.ARTable().Mode)
				assert.Nil(t, nd.a.ARTable().Alternatives(5))
			}
		})
	}
}

// TestARInfoGet: ARInfo after reset, the capabilities a switch claims and
// the stored configuration read back after a Set; a Set does not change
// the capabilities.
func TestARInfoGet(t *testing.T) {
	nd := newNode(t, mad.NodeTypeSwitch, 4, func(c *agent.Config) { c.LinearFDBCap = 256 })
	got := mad.ARInfo(doAR(t, nd, arMAD(mad.MethodGet, mad.AttrARInfo, 0, nil)).Data()).Fields()
	caps := mad.ARInfoFields{ModesSupported: mad.ARModesAll, AFISupported: true, GroupCap: agent.DefaultARGroupCap,
		LIDCap: 256, Threshold: agent.DefaultARThreshold}
	assert.Equal(t, caps, got, "after reset: off, 75 %")

	set := mad.ARInfoFields{ModesSupported: 0, GroupCap: 1, LIDCap: 1, Enable: true, Mode: mad.ARAdaptive,
		Threshold: 40, AFCVL: 2, GroupTop: 3}
	got = mad.ARInfo(doAR(t, nd, arMAD(mad.MethodSet, mad.AttrARInfo, 0, arInfoData(set))).Data()).Fields()
	want := caps
	want.Enable, want.Mode, want.Threshold, want.AFCVL, want.GroupTop = true, mad.ARAdaptive, 40, 2, 3
	assert.Equal(t, want, got, "the Set's answer")
	got = mad.ARInfo(doAR(t, nd, arMAD(mad.MethodGet, mad.AttrARInfo, 0, nil)).Data()).Fields()
	assert.Equal(t, want, got, "a Get")
	cpi := mad.ClassPortInfo(doAR(t, nd, arMAD(mad.MethodGet, mad.AttrClassPortInfo, 0, nil)).Data()).Fields()
	assert.EqualValues(t, mad.ARVersion, cpi.ClassVersion)
}

// TestARTablePublished: the table the crossbar reads follows the Sets:
// the groups of the LIDs, the mode only when enabled, groups up to
// GroupTop; a Set that changes nothing publishes nothing, a refused one
// leaves the table as it was.
func TestARTablePublished(t *testing.T) {
	nd := newNode(t, mad.NodeTypeSwitch, 8)
	set := func(attr mad.AttrID, mod uint32, data []byte) mad.Status {
		return doAR(t, nd, arMAD(mad.MethodSet, attr, mod, data)).MAD().Status()
	}
	require.Equal(t, mad.StatusOK, set(mad.AttrARGroupTable, 0, arGroups(map[int][]uint8{1: {5, 6, 7, 8}, 2: {7, 8}})))
	require.Equal(t, mad.StatusOK, set(mad.AttrARLIDTable, 1, arLIDs(map[int]uint16{0: 1, 1: 1, 2: 2, 3: 0})))
	tbl := nd.a.ARTable()
	assert.Equal(t, mad.AROff, tbl.Mode, "not enabled yet")
	assert.Nil(t, tbl.Alternatives(64), "GroupTop 0: no group is in use")

	info := mad.ARInfoFields{Enable: true, Mode: mad.ARAFI, Threshold: 60, AFCVL: 3, GroupTop: 2}
	require.Equal(t, mad.StatusOK, set(mad.AttrARInfo, 0, arInfoData(info)))
	tbl = nd.a.ARTable()
	assert.Equal(t, mad.ARAFI, tbl.Mode)
	assert.EqualValues(t, 60, tbl.Threshold)
	assert.EqualValues(t, 3, tbl.AFCVL)
	assert.Equal(t, []uint8{5, 6, 7, 8}, tbl.Alternatives(64))
	assert.Equal(t, []uint8{5, 6, 7, 8}, tbl.Alternatives(65))
	assert.Equal(t, []uint8{7, 8}, tbl.Alternatives(66))
	assert.Nil(t, tbl.Alternatives(67))
	assert.Nil(t, tbl.Alternatives(1))
	assert.Nil(t, tbl.Alternatives(1000))
	updates := nd.a.Stats().ARUpdates
	assert.EqualValues(t, 3, updates)

	require.Equal(t, mad.StatusOK, set(mad.AttrARInfo, 0, arInfoData(info)))
	require.Equal(t, mad.StatusOK, set(mad.AttrARLIDTable, 1, arLIDs(map[int]uint16{0: 1, 1: 1, 2: 2})))
	assert.Equal(t, updates, nd.a.Stats().ARUpdates, "the same values again: no new table")
	assert.Same(t, tbl, nd.a.ARTable())

	require.Equal(t, mad.StatusInvalidField, set(mad.AttrARGroupTable, 0, arGroups(map[int][]uint8{1: {1}, 2: {9}})))
	assert.Same(t, tbl, nd.a.ARTable(), "refused whole")
	got := mad.ARGroupTable(doAR(t, nd, arMAD(mad.MethodGet, mad.AttrARGroupTable, 0, nil)).Data()).Fields()
	assert.Equal(t, mad.PortMaskOf(5, 6, 7, 8), got.Groups[1], "nothing of the refused Set stored")

	info.Enable = false
	require.Equal(t, mad.StatusOK, set(mad.AttrARInfo, 0, arInfoData(info)))
	assert.Equal(t, mad.AROff, nd.a.ARTable().Mode, "disabled: off, whatever the mode")
	assert.Equal(t, []uint8{7, 8}, nd.a.ARTable().Alternatives(66), "the groups stay")

	require.Equal(t, mad.StatusOK, set(mad.AttrARLIDTable, 1, arLIDs(nil)))
	assert.Nil(t, nd.a.ARTable().Alternatives(66), "cleared")
	lids := mad.ARLIDTable(doAR(t, nd, arMAD(mad.MethodGet, mad.AttrARLIDTable, 1, nil)).Data()).Fields()
	assert.Equal(t, mad.ARLIDTableFields{}, lids)
}

// TestARClassOnCA: a CA has no adaptive routing agent; class 0x0A, which
// is also Mellanox's vendor class (vendstat), goes to its MAD client like
// any class without an agent.
func TestARClassOnCA(t *testing.T) {
	nd := newNode(t, mad.NodeTypeCA, 1, func(c *agent.Config) { c.LocalGMP = true })
	o := one(t, nd.a.HandleMAD(gmp(arMAD(mad.MethodGet, mad.AttrARInfo, 0, nil))))
	assert.True(t, o.Local, "handed to the MAD client")
	assert.Zero(t, nd.a.Stats().ARRequests)
}
