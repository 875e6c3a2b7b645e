package interop_test

// Congestion control (class 0x21) and the PMA's optional counters:
// OpenSM with congestion_control TRUE, ibccquery/ibccconfig and perfquery,
// unmodified, through exec --umad.

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/harness"
	"ibfab/internal/testsupport/fabrictest"
	"ibfab/nodeproc"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

const ccWait = 60 * time.Second

// ccOpenSMConf is OpenSM's configuration: congestion control on, with
// values distinct from the agents' reset state so that a read-back shows
// OpenSM's Set arrived.
const ccOpenSMConf = `force_log_flush TRUE
congestion_control TRUE
cc_sw_cong_setting_control_map 0x1f
cc_sw_cong_setting_threshold 0x5
cc_sw_cong_setting_packet_size 1
cc_sw_cong_setting_marking_rate 0x10
cc_ca_cong_setting_port_control 0x1
cc_ca_cong_setting_control_map 0x3
cc_cct 1:2,1:3,1:4
`

// ccField returns the value of a libibmad dump line "Name:.....value".
func ccField(t *testing.T, out, name string) uint64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `:\.*(\S+)$`).FindStringSubmatch(out)
	require.NotNil(t, m, "no %s in:\n%s", name, out)
	v, err := strconv.ParseUint(m[1], 0, 64)
	require.NoError(t, err, "%s", m[1])
	return v
}

// ccFabric brings up two switches with a host each and OpenSM with
// congestion control at the first host; it returns the fabric, OpenSM,
// and the base LIDs by node name.
func ccFabric(t *testing.T) (*fabrictest.Fabric, *fabrictest.OpenSM, map[string]uint16) {
	topo, err := topologies.Irregular(2, 4, 1, 1)
	require.NoError(t, err)
	f := fabrictest.Up(t, "cc", topo, harness.UpOptions{})
	dir := t.TempDir()
	conf := filepath.Join(dir, "opensm.conf")
	require.NoError(t, os.WriteFile(conf, []byte(ccOpenSMConf), 0o644))
	o := &fabrictest.OpenSM{Log: filepath.Join(dir, "opensm.log"), Dir: dir}
	o.D = f.StartUMAD(f.Hosts()[0], "env", "OSM_CACHE_DIR="+dir, "opensm", "-F", conf, "-f", o.Log)
	o.WaitLog(t, ccWait, 0, "SUBNET UP")
	lid := map[string]uint16{}
	fabrictest.Wait(t, ccWait, "every port Active with a LID", func() bool {
		for _, n := range f.Status().Nodes {
			if n.Ports[0].LID == 0 {
				return false
			}
			lid[n.Name] = n.Ports[0].LID
		}
		return true
	})
	return f, o, lid
}

// ccSwitch returns the last switch of f's status.
func ccSwitch(f *fabrictest.Fabric) string {
	var sw string
	for _, n := range f.Status().Nodes {
		if n.Type == "switch" {
			sw = n.Name
		}
	}
	return sw
}

// TestCongestionControlOpenSM: OpenSM configures congestion control on
// every switch and CA (its own port included, through the node's agent),
// keeps running, logs no CC error, and ibccquery reads back what it set;
// ibccconfig then sets values ibccquery reads back.
func TestCongestionControlOpenSM(t *testing.T) {
	f, o, lid := ccFabric(t)
	hosts := f.Hosts()
	sw := ""
	for _, n := range f.Status().Nodes {
		if n.Type == "switch" {
			sw = n.Name
			break
		}
	}
	require.NotEmpty(t, sw)
	// A second sweep configures CC again: OpenSM must still be there.
	time.Sleep(2 * time.Second)
	exited, err := o.D.Exited()
	require.False(t, exited, "opensm exited (%v): %s", err, o.D.Output())
	log := o.LogText(t, 0)
	assert.NotRegexp(t, `ERR C1[0-9A-F]{2}`, log, "OpenSM CC errors")

	at := hosts[len(hosts)-1]
	q := func(args ...string) string {
		return f.For(t).MustUMAD(at, append([]string{"ibccquery"}, args...)...)
	}
	out := q("SwitchCongestionSetting", strconv.Itoa(int(lid[sw])))
	assert.EqualValues(t, 0x1f, ccField(t, out, "Control_Map"))
	assert.EqualValues(t, 5, ccField(t, out, "Threshold"))
	assert.EqualValues(t, 0x10, ccField(t, out, "Marking_Rate"))
	for _, h := range hosts { // OpenSM's own port and another host's
		out = q("CACongestionSetting", strconv.Itoa(int(lid[h])))
		assert.EqualValues(t, 1, ccField(t, out, "Port_Control"), h)
		assert.EqualValues(t, 3, ccField(t, out, "Control_Map"), h)
		out = q("CongestionControlTable", strconv.Itoa(int(lid[h])))
		assert.EqualValues(t, 2, ccField(t, out, "CCTI_Limit"), h)
		assert.Contains(t, out, "CCT_Multiplier:..................4", h)
		out = q("CongestionInfo", strconv.Itoa(int(lid[h])))
		assert.EqualValues(t, 2, ccField(t, out, "ControlTableCap"), h)
	}

	h := strconv.Itoa(int(lid[hosts[0]]))
	f.For(t).MustUMAD(at, "ibccconfig", "CongestionControlTable", h, "1", "0", "1:5", "2:7")
	out = q("CongestionControlTable", h)
	assert.EqualValues(t, 1, ccField(t, out, "CCTI_Limit"))
	assert.Contains(t, out, "CCT_Multiplier:..................7")
	f.For(t).MustUMAD(at, "ibccconfig", "CACongestionSetting", h, "0", "0x4", "300", "2", "3", "0")
	out = q("CACongestionSetting", h)
	assert.Contains(t, out, "CCTI_Timer:......................300")
	for _, a := range []string{"CongestionKeyInfo", "CongestionLog", "Timestamp", "ClassPortInfo"} {
		q(a, strconv.Itoa(int(lid[sw])))
		q(a, h)
	}
}

// TestCongestionControlStatus: CC requests the agent cannot serve get the
// spec's status, at a switch and at a CA, instead of silence.
func TestCongestionControlStatus(t *testing.T) {
	f, _, lid := ccFabric(t)
	hosts := f.Hosts()
	from := hosts[len(hosts)-1]
	sw := ccSwitch(f)
	cases := []struct {
		name   string
		method mad.Method
		attr   mad.AttrID
		want   mad.Status
	}{
		{"unknown attribute", mad.MethodGet, 0x99, mad.StatusMethodAttrUnsupported},
		{"Set of CongestionInfo", mad.MethodSet, mad.AttrCongestionInfo, mad.StatusMethodAttrUnsupported},
		{"unknown method", 0x10, mad.AttrCongestionInfo, mad.StatusMethodUnsupported},
	}
	for _, node := range []string{sw, hosts[0]} {
		for i, c := range cases {
			t.Run(node+"/"+c.name, func(t *testing.T) {
				m := mad.AppendCCMAD(nil, &mad.CCMADFields{Method: c.method, TransactionID: uint64(0x7700 + i),
					AttrID: c.attr})
				var r nodeproc.ReceivedMAD
				require.NoError(t, f.Call(from, "mad", nodeproc.MADArgs{Port: 1, DLID: lid[node], QP: 1, MAD: m,
					TimeoutMS: 2000}, &r))
				got := mad.MAD(r.MAD)
				assert.Equal(t, mad.MethodGetResp, got.Method())
				assert.Equal(t, c.want, got.Status(), "status %v", got.Status())
			})
		}
	}
}

// TestPMAOptionalCounters: every perfquery option is answered at a switch
// port and an HCA port (the congestion detection ones at the switch
// only), ClassPortInfo says what is served, and the per-VL receive
// counters move with traffic.
func TestPMAOptionalCounters(t *testing.T) {
	f, _, lid := ccFabric(t)
	hosts := f.Hosts()
	from := hosts[len(hosts)-1]
	sw := ccSwitch(f)
	opts := []string{"-x", "-E", "-D", "--oprcvcounters", "--flowctlcounters", "--vloppackets",
		"--vlopdata", "--vlxmitflowctlerrors", "--vlxmitcounters", "--rcvcc", "--slrcvfecn", "--slrcvbecn"}
	// Congestion detection and marking are a switch port's: a CA's PMA
	// does not serve these.
	swOpts := []string{"--swportvlcong", "--xmitcc", "--vlxmittimecc"}
	for _, node := range []string{sw, hosts[0]} {
		all := opts
		if node == sw {
			all = append(all[:len(all):len(all)], swOpts...)
		}
		for _, o := range all {
			t.Run(node+o, func(t *testing.T) {
				out, stderr, err := f.For(t).UMAD(from, "perfquery", o, strconv.Itoa(int(lid[node])), "1")
				require.NoError(t, err, "perfquery %s: %s", o, stderr)
				assert.NotContains(t, stderr, "No extended counter support")
				if o == "-x" {
					assert.Contains(t, out, "CapMask: 0x1300")
				}
			})
		}
	}

	// PortVLOpPackets for UD SEND Only (opcode 0x64) on VL0 of the switch
	// port facing the querying host counts the queries themselves.
	vl0 := func() uint64 {
		l := mad.PMAOptionalLayouts[mad.AttrPortVLOpPackets]
		p := mad.PMAFields{Method: mad.MethodGet, TransactionID: 0x7800, AttrID: mad.AttrPortVLOpPackets}
		l.Encode(p.Data[:], &mad.PMACounterSetFields{OpCode: 0x64, PortSelect: mad.PortSelectAll})
		var r nodeproc.ReceivedMAD
		require.NoError(t, f.Call(from, "mad", nodeproc.MADArgs{Port: 1, DLID: lid[sw], QP: 1,
			MAD: mad.AppendPMA(nil, &p), TimeoutMS: 2000}, &r))
		require.Equal(t, mad.StatusOK, mad.MAD(r.MAD).Status())
		got := l.Fields(mad.PMA(r.MAD).Data())
		require.EqualValues(t, 0x64, got.OpCode)
		return got.Counters[0]
	}
	before := vl0()
	for range 5 {
		f.For(t).MustUMAD(from, "perfquery", strconv.Itoa(int(lid[sw])), "1")
	}
	after := vl0()
	assert.Greater(t, after, before, fmt.Sprintf("PortVLOpPackets VL0 %d then %d", before, after))
}
