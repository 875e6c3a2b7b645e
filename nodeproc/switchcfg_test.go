package nodeproc

import (
	"context"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/agent"
	"ibfab/internal/clock"
	"ibfab/link"
	"ibfab/link/pipe"
	"ibfab/port"
	"ibfab/softswitch"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

func TestSwitchFlags(t *testing.T) {
	base := []string{"--fabric", "f", "--node", "sw1"}
	for _, tc := range []struct {
		name    string
		kind    Kind
		args    []string
		wantErr string
		blocks  []int
		arch    softswitch.Arch
		procs   int
	}{
		{name: "defaults", kind: KindSwitch, procs: 1},
		{name: "procs", kind: KindHCA, args: []string{"--procs", "0"}},
		{name: "negative procs", kind: KindHCA, args: []string{"--procs", "-2"}, wantErr: "--procs -2"},
		{name: "per-VL buffers", kind: KindSwitch, args: []string{"--vl-blocks", "512,0, 256"}, blocks: []int{512, 0, 256}, procs: 1},
		{name: "IQ", kind: KindSwitch, args: []string{"--switch-arch", "iq"}, arch: softswitch.ArchIQ, procs: 1},
		{name: "VOQ", kind: KindSwitch, args: []string{"--switch-arch=voq"}, procs: 1},
		{name: "HCA buffers", kind: KindHCA, args: []string{"--vl-blocks", "2048"}, blocks: []int{2048}, procs: 1},
		{name: "not a number", kind: KindSwitch, args: []string{"--vl-blocks", "512,x"}, wantErr: "block counts"},
		{name: "negative", kind: KindSwitch, args: []string{"--vl-blocks", "-1"}, wantErr: "block counts"},
		{name: "under one packet", kind: KindSwitch, args: []string{"--vl-blocks", "512,10"}, wantErr: "--vl-blocks"},
		{name: "more than the data VLs", kind: KindSwitch, args: []string{"--data-vls", "2", "--vl-blocks", "100,100,100"}, wantErr: "--vl-blocks"},
		{name: "unknown architecture", kind: KindSwitch, args: []string{"--switch-arch", "oq"}, wantErr: "want one of voq, iq"},
		{name: "HCA has no architecture", kind: KindHCA, args: []string{"--switch-arch", "iq"}, wantErr: "switch-arch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parseFlags(tc.kind, append(append([]string(nil), base...), tc.args...), io.Discard)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.blocks, o.Port.VLBlocks)
			assert.Equal(t, tc.arch, o.SwitchArch)
			assert.Equal(t, tc.procs, o.Procs)
		})
	}
}

// switchNode is a switch Node of 4 ports, 1 and 2 cabled to pipes whose
// other ends are Ports too.
func switchNode(t *testing.T) *Node {
	t.Helper()
	clk := clock.NewManual(time.Unix(0, 0))
	eps := []link.Endpoint{nil}
	for range 2 {
		a, b := pipe.NewPair()
		eps = append(eps, a)
		p, err := port.New(b, port.Config{Clock: clk}, nil)
		require.NoError(t, err)
		t.Cleanup(func() { p.Close() })
	}
	sw, err := softswitch.New(softswitch.Config{Name: "sw1", NumPorts: 4, NodeGUID: 0x99, Ports: eps, Clock: clk,
		PortConfig: port.Config{DataVLs: 4}})
	require.NoError(t, err)
	t.Cleanup(sw.Close)
	return &Node{kind: KindSwitch, name: "sw1", tn: &topologies.Node{Name: "sw1", GUID: 0x99}, sw: sw, done: make(chan struct{})}
}

func TestSwitchConfigOp(t *testing.T) {
	n := switchNode(t)
	call := func(op, args string) (any, error) {
		var raw json.RawMessage
		if args != "" {
			raw = json.RawMessage(args)
		}
		return n.handle(context.Background(), op, raw)
	}
	for _, tc := range []struct {
		name, args string
		want       SwitchConfigStatus
		wantErr    string
	}{
		{name: "read", want: SwitchConfigStatus{Arch: softswitch.ArchVOQ, RxBlocks: port.DefaultRxBlocks, ARMode: mad.AROff}},
		{name: "read with empty args", args: "{}", want: SwitchConfigStatus{Arch: softswitch.ArchVOQ, RxBlocks: port.DefaultRxBlocks, ARMode: mad.AROff}},
		{name: "IQ and buffers", args: `{"arch":"iq","vl_blocks":[512,512,512,512]}`,
			want: SwitchConfigStatus{Arch: softswitch.ArchIQ, RxBlocks: port.DefaultRxBlocks, VLBlocks: []int{512, 512, 512, 512}, ARMode: mad.AROff}},
		{name: "buffers alone", args: `{"vl_blocks":[2048,0],"reset_downstream":true}`,
			want: SwitchConfigStatus{Arch: softswitch.ArchIQ, RxBlocks: port.DefaultRxBlocks, VLBlocks: []int{2048, 0}, ARMode: mad.AROff}},
		{name: "bad architecture changes nothing", args: `{"arch":"oq","vl_blocks":[100]}`, wantErr: "want one of voq, iq"},
		{name: "bad buffers change nothing", args: `{"arch":"voq","vl_blocks":[10]}`, wantErr: "cannot hold"},
		{name: "too many VLs", args: `{"vl_blocks":[100,100,100,100,100]}`, wantErr: "5 VLs"},
		{name: "unknown field", args: `{"voq":true}`, wantErr: "unknown field"},
		{name: "credit slack", args: `{"credit_slack":1}`,
			want: SwitchConfigStatus{Arch: softswitch.ArchIQ, RxBlocks: port.DefaultRxBlocks, VLBlocks: []int{2048, 0}, CreditSlack: 1, ARMode: mad.AROff}},
		{name: "negative credit slack", args: `{"credit_slack":-1,"arch":"voq"}`, wantErr: "credit slack"},
		{name: "unchanged by the errors", args: "{}",
			want: SwitchConfigStatus{Arch: softswitch.ArchIQ, RxBlocks: port.DefaultRxBlocks, VLBlocks: []int{2048, 0}, CreditSlack: 1, ARMode: mad.AROff}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := call("switch-config", tc.args)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, res)
		})
	}
	assert.Equal(t, []int{2048, 0, port.DefaultRxBlocks, port.DefaultRxBlocks},
		[]int{n.sw.Port(1).Credits(0).RxCapacity, n.sw.Port(1).Credits(1).RxCapacity, n.sw.Port(1).Credits(2).RxCapacity,
			n.sw.Port(2).Credits(3).RxCapacity})

	res, err := call("watch", `{"lids":[7,3]}`)
	require.NoError(t, err)
	assert.Equal(t, WatchArgs{LIDs: []uint16{3, 7}}, res)
	_, err = call("watch", "")
	require.ErrorContains(t, err, "missing args")

	n.sw.Agent().SetARTable(agent.NewARTable(mad.ARAFI, 75, 3, nil, nil))
	st := n.Status()
	require.NotNil(t, st.SwitchConfig)
	assert.Equal(t, SwitchConfigStatus{Arch: softswitch.ArchIQ, RxBlocks: port.DefaultRxBlocks, VLBlocks: []int{2048, 0}, CreditSlack: 1,
		ARMode: mad.ARAFI, ARThreshold: 75, AFCVL: 3, Watched: []uint16{3, 7}}, *st.SwitchConfig)
	b, err := json.Marshal(st)
	require.NoError(t, err)
	var got struct {
		SwitchConfig map[string]any `json:"switch_config"`
		Ports        []struct {
			Credits []map[string]any `json:"credits"`
		} `json:"ports"`
	}
	require.NoError(t, json.Unmarshal(b, &got))
	assert.Equal(t, "iq", got.SwitchConfig["arch"])
	assert.Equal(t, "afi", got.SwitchConfig["ar_mode"])
	require.NotEmpty(t, got.Ports[0].Credits)
	for _, key := range []string{"rx_used", "rx_capacity", "down_used", "down_capacity", "xmit_wait"} {
		assert.Contains(t, got.Ports[0].Credits[0], key)
	}
	assert.EqualValues(t, 2048, got.Ports[0].Credits[0]["rx_capacity"])

	_, err = call("flow-start", `{"id":1}`)
	require.ErrorContains(t, err, "switch-config")
}
