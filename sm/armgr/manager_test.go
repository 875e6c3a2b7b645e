package armgr_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/sm/armgr"
	"ibfab/sm/routing"
	"ibfab/sm/routing/routingtest"
	"ibfab/sm/txn"
	"ibfab/sm/txn/txntest"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// errNoAnswer is what the fake gives a request no switch answers: the
// transaction layer's timeout.
var errNoAnswer = errors.New("fake: no answer")

// fakeSwitch is one switch's adaptive routing attributes, in their wire
// layout, by attribute and modifier; blocks never written read as zero.
type fakeSwitch struct {
	attrs map[fakeAttr][]byte
}

type fakeAttr struct {
	id  mad.AttrID
	mod uint32
}

// fakeSender is an armgr.Sender over fake switches, by LID.
type fakeSender struct {
	txntest.Queue
	switches map[uint16]*fakeSwitch
}

// answer is what the switch addressed makes of r.
func (f *fakeSender) answer(set bool, r *txn.Request) *txn.Response {
	sw := f.switches[r.LID]
	if sw == nil || r.Class != mad.ClassVendorAR {
		return &txn.Response{Err: errNoAnswer}
	}
	a := fakeAttr{r.Attr, r.Mod}
	if set {
		sw.attrs[a] = append([]byte(nil), r.Data...)
	}
	data, ok := sw.attrs[a]
	if !ok {
		data = make([]byte, mad.ARDataSize)
	}
	return &txn.Response{Data: data}
}

// fakeFabric is a routed fabric of topo and its view, every switch
// a fake with room for 8 groups and 64 LIDs.
func fakeFabric(t *testing.T, topo *topologies.Topology, dataVLs int) (*fakeSender, *armgr.View) {
	t.Helper()
	fab, err := routing.NewFabric(topo, 0, 1, 0)
	require.NoError(t, err)
	f := &fakeSender{switches: map[uint16]*fakeSwitch{}}
	f.Answer = f.answer
	v := &armgr.View{Fabric: fab, DataVLs: dataVLs}
	for _, e := range fab.Ends() {
		if topo.Node(e.Node).Type != topologies.Switch {
			continue
		}
		info := mad.AppendARInfo(nil, &mad.ARInfoFields{GroupCap: 8, LIDCap: 64})
		f.switches[e.LID] = &fakeSwitch{attrs: map[fakeAttr][]byte{{mad.AttrARInfo, 0}: info}}
		v.Switches = append(v.Switches, armgr.Switch{GUID: topo.Node(e.Node).GUID, Node: e.Node,
			Name: fmt.Sprintf("%s[0]", topo.Node(e.Node).Name), LID: e.LID})
	}
	return f, v
}

// arInfos returns every fake switch's ARInfo.
func (f *fakeSender) arInfos() []mad.ARInfoFields {
	var out []mad.ARInfoFields
	for _, sw := range f.switches {
		out = append(out, mad.ARInfo(sw.attrs[fakeAttr{mad.AttrARInfo, 0}]).Fields())
	}
	return out
}

// events collects the manager's events.
type events []armgr.Event

func (e *events) add(ev armgr.Event) { *e = append(*e, ev) }

// TestProgram: on a 2-ary 2-tree a first Program reads every switch and
// writes its groups, LIDs and ARInfo (the AFC VL the highest data VL the
// ports run when AFCVLHighest); a second sends nothing. On a mesh AR is
// left off, with an error event when a mode was asked for.
func TestProgram(t *testing.T) {
	tree, err := topologies.KAryNTree(2, 2)
	require.NoError(t, err)
	for _, tc := range []struct {
		name    string
		topo    *topologies.Topology
		cfg     armgr.Config
		dataVLs int
		want    armgr.Result // Read, Sets and Groups checked apart
		enable  bool
		afc     uint8
		events  []armgr.Action
		warn    string
	}{
		{name: "fat tree, highest AFC VL", topo: tree, dataVLs: 8, enable: true, afc: 7,
			cfg:  armgr.Config{Mode: mad.ARAFI, Threshold: 75, AFCVL: armgr.AFCVLHighest},
			want: armgr.Result{Mode: mad.ARAFI, Threshold: 75, AFCVL: 7, Switches: 4, Enabled: 4}},
		{name: "fat tree, mode off", topo: tree, dataVLs: 4,
			cfg:  armgr.Config{Mode: mad.AROff, Threshold: 75, AFCVL: 1},
			want: armgr.Result{Mode: mad.AROff, Threshold: 75, AFCVL: 1, Switches: 4}, afc: 1},
		{name: "AFC VL the ports do not run", topo: tree, dataVLs: 2, enable: true, afc: 3,
			cfg:  armgr.Config{Mode: mad.ARAdaptive, Threshold: 50, AFCVL: 3},
			want: armgr.Result{Mode: mad.ARAdaptive, Threshold: 50, AFCVL: 3, Switches: 4, Enabled: 4},
			warn: "AFC VL 3, but some cabled ports run VL0-VL1 only"},
		{name: "mesh", topo: routingtest.Grid(t, false, 2, 2), dataVLs: 8,
			cfg:    armgr.Config{Mode: mad.ARAdaptive, Threshold: 75},
			want:   armgr.Result{Mode: mad.ARAdaptive, Threshold: 75, Switches: 4},
			events: []armgr.Action{armgr.ActionError}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, v := fakeFabric(t, tc.topo, tc.dataVLs)
			var ev events
			cfg := tc.cfg
			cfg.OnEvent = ev.add
			m := armgr.New(&cfg, f)
			r, warns, err := m.Program(context.Background(), v)
			require.NoError(t, err)
			assert.Equal(t, len(v.Switches), r.Read, "every switch read once")
			got := *r
			got.Read, got.Sets, got.Groups, got.Error = 0, 0, 0, ""
			assert.Equal(t, tc.want, got)
			if tc.events != nil {
				assert.Contains(t, r.Error, "adaptive routing left off")
			} else {
				assert.Positive(t, f.Take()[txntest.Sent{Set: true, Attr: mad.AttrARLIDTable}], "the LID tables written")
				assert.Equal(t, 1, r.Groups)
			}
			if tc.warn != "" {
				assert.Contains(t, warns, tc.warn)
			} else {
				assert.Empty(t, warns)
			}
			var actions []armgr.Action
			for _, e := range ev {
				actions = append(actions, e.Action)
			}
			assert.Equal(t, tc.events, actions)
			for _, info := range f.arInfos() {
				assert.Equal(t, tc.enable, info.Enable)
				assert.Equal(t, tc.afc, info.AFCVL)
			}

			f.Take()
			again, _, err := m.Program(context.Background(), v)
			require.NoError(t, err)
			assert.Zero(t, again.Read)
			assert.Zero(t, again.Sets)
			assert.Empty(t, f.Take(), "nothing differs: nothing sent")
		})
	}
}

// TestApply: a setting is rejected when it does not check, pending with
// the subnet down, else programmed at once with one ARInfo Set per
// switch; the reply shows the configuration as the switches hold it.
func TestApply(t *testing.T) {
	tree, err := topologies.KAryNTree(2, 2)
	require.NoError(t, err)
	f, v := fakeFabric(t, tree, 8)
	var ev events
	m := armgr.New(&armgr.Config{Mode: mad.AROff, Threshold: 75, AFCVL: armgr.AFCVLHighest, OnEvent: ev.add}, f)
	ctx := context.Background()
	_, _, err = m.Program(ctx, v)
	require.NoError(t, err)
	f.Take()
	assert.Equal(t, uint8(7), m.Reply(true, nil).AFCVL, "AFCVLHighest as the switches hold it")

	afi, vl, bad, zero := mad.ARAFI, uint8(2), uint8(8), uint8(0)
	for _, tc := range []struct {
		name   string
		set    armgr.Setting
		up     bool
		action armgr.Action
		reason string
		sets   map[txntest.Sent]int
	}{
		{name: "AFC VL past the ports'", set: armgr.Setting{AFCVL: &bad}, up: true,
			action: armgr.ActionReject, reason: "AFC VL 8, the ports run VL0-VL7", sets: map[txntest.Sent]int{}},
		{name: "threshold 0", set: armgr.Setting{Threshold: &zero}, up: true,
			action: armgr.ActionReject, reason: "threshold 0", sets: map[txntest.Sent]int{}},
		{name: "subnet down", set: armgr.Setting{Mode: &afi}, action: armgr.ActionPending,
			reason: "subnet not up", sets: map[txntest.Sent]int{}},
		{name: "afi on VL2", set: armgr.Setting{Mode: &afi, AFCVL: &vl}, up: true, action: armgr.ActionSet,
			sets: map[txntest.Sent]int{{Set: true, Attr: mad.AttrARInfo}: 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var view *armgr.View
			if tc.up {
				view = v
			}
			e, err := m.Apply(ctx, &tc.set, v.DataVLs, view)
			require.NoError(t, err)
			require.NotNil(t, e)
			assert.Equal(t, "ar", e.Event)
			assert.Equal(t, tc.action, e.Action)
			if tc.reason != "" {
				assert.Contains(t, e.Reason, tc.reason)
			}
			assert.Equal(t, tc.sets, f.Sets())
			assert.Equal(t, *e, ev[len(ev)-1], "the event heard is the one returned")
		})
	}
	rep := m.Reply(true, nil)
	assert.Equal(t, armgr.Reply{Mode: mad.ARAFI, Threshold: 75, AFCVL: 2, Installed: true, Last: rep.Last}, rep)
	require.NotNil(t, rep.Last)
	assert.Equal(t, 4, rep.Last.Enabled)
	for _, info := range f.arInfos() {
		assert.True(t, info.Enable)
		assert.Equal(t, mad.ARAFI, info.Mode)
		assert.EqualValues(t, 2, info.AFCVL)
	}
}
