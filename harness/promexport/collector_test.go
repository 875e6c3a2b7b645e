package promexport

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"ibfab/harness"
	"ibfab/nodeproc"
)

// fixture is a fabric of an HCA cabled to a switch, and a second HCA
// whose process is gone.
func fixture() *harness.FabricStatus {
	hca := nodeproc.Status{Name: "ca1", Type: "hca", GUID: "0x0000000000000010", Ports: []nodeproc.PortStatus{{
		Port: 1, GUID: "0x0000000000000011", Phys: "LinkUp", State: "Active", LID: 3, Peer: "sw1[2]",
		Width: "4X", Speed: "SDR", Rate: 8e9,
		Counters: nodeproc.Counters{PortXmitData: 100, PortRcvData: 50, PortXmitPkts: 7, PortRcvPkts: 6,
			SymbolErrorCounter: 2, PortXmitWait: 9, VL15Dropped: 1},
		Drops:   map[string]uint64{"no-credit": 4},
		VLXmit:  []nodeproc.VLXmit{{VL: 0, Packets: 5, Bytes: 500}, {VL: 15, Packets: 2, Bytes: 256}},
		Credits: []nodeproc.VLCredits{{VL: 0, XmitWait: 9}},
	}}}
	sw := nodeproc.Status{Name: "sw1", Type: "switch", GUID: "0x0000000000000020", Ports: []nodeproc.PortStatus{
		{Port: 1, Phys: "Polling", State: "Down", LID: 1},
		{Port: 2, Phys: "LinkUp", State: "Active", LID: 1, Peer: "ca1[1]", Width: "4X", Speed: "NDR",
			Counters: nodeproc.Counters{PortXmitData: 50, PortRcvData: 100}},
	}}
	dead := nodeproc.Status{Name: "ca2", Type: "hca", GUID: "0x0000000000000030", Ports: []nodeproc.PortStatus{{Port: 1, Phys: "Unknown", State: "Unknown"}}}
	return &harness.FabricStatus{Fabric: "pm", Nodes: []harness.NodeStatus{
		{Status: hca, Alive: true}, {Status: sw, Alive: true}, {Status: dead, Error: "process not running"}}}
}

// gather returns every sample as "name{l=v,…}" → value, labels sorted.
func gather(t *testing.T, c prometheus.Collector) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.Metric {
			var ls []string
			for _, l := range m.Label {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			sort.Strings(ls)
			out[mf.GetName()+"{"+strings.Join(ls, ",")+"}"] = value(mf.GetType(), m)
		}
	}
	return out
}

func value(t dto.MetricType, m *dto.Metric) float64 {
	if t == dto.MetricType_COUNTER {
		return m.Counter.GetValue()
	}
	return m.Gauge.GetValue()
}

func TestFamilies(t *testing.T) {
	got := gather(t, newCollector(func(context.Context) (*harness.FabricStatus, error) { return fixture(), nil }))
	const (
		neHCA  = "{device=ca1,guid=0x0000000000000011,node=ca1,peer=sw1[2],port=1}"
		trHCA  = "{guid=0x0000000000000011,hca=ca1,node=ca1,peer=sw1[2],port=1,switch=sw1}"
		trSw2  = "{guid=0x0000000000000020,node=sw1,peer=ca1[1],port=2,switch=sw1}"
		ownHCA = "{guid=0x0000000000000011,node=ca1,peer=sw1[2],port=1"
		ownSw1 = "{guid=0x0000000000000020,node=sw1,peer=,port=1"
	)
	tests := []struct {
		sample string
		want   float64
	}{
		// node_exporter: data in bytes, the words × 4.
		{"node_infiniband_port_data_transmitted_bytes_total" + neHCA, 400},
		{"node_infiniband_port_data_received_bytes_total" + neHCA, 200},
		{"node_infiniband_legacy_data_transmitted_bytes_total" + neHCA, 400},
		{"node_infiniband_port_packets_transmitted_total" + neHCA, 7},
		{"node_infiniband_port_transmit_wait_total" + neHCA, 9},
		{"node_infiniband_state_id" + neHCA, 4},
		{"node_infiniband_symbol_error_total" + neHCA, 2},
		{"node_infiniband_vl15_dropped_total" + neHCA, 1},
		{"node_infiniband_info{board_id=ibfab,device=ca1,firmware_version=1.0.0,hca_type=ibfab}", 1},
		{"node_infiniband_physical_state_id" + neHCA, 5},
		{"node_infiniband_rate_bytes_per_second" + neHCA, 1.25e9}, // 10 Gb/s nominal
		// treydock: HCA and switch families.
		{"infiniband_hca_port_transmit_data_bytes_total" + trHCA, 400},
		{"infiniband_hca_port_symbol_error_total" + trHCA, 2},
		{"infiniband_hca_port_vl15_dropped_total" + trHCA, 1},
		{"infiniband_hca_rate_bytes_per_second" + trHCA, 1.25e9},
		{"infiniband_switch_port_receive_data_bytes_total" + trSw2, 400},
		{"infiniband_switch_rate_bytes_per_second" + trSw2, 50e9},
		{"infiniband_hca_info{guid=0x0000000000000011,hca=ca1,lid=3,port=1}", 1},
		{"infiniband_switch_info{guid=0x0000000000000020,lid=1,switch=sw1}", 1},
		// ibfab's own.
		{"ibfab_port_drops_total{cause=no-credit,guid=0x0000000000000011,node=ca1,peer=sw1[2],port=1}", 4},
		{"ibfab_port_vl_transmitted_packets_total" + ownHCA + ",vl=15}", 2},
		{"ibfab_port_vl_transmitted_bytes_total" + ownHCA + ",vl=0}", 500},
		{"ibfab_port_vl_transmit_wait_total" + ownHCA + ",vl=0}", 9},
		{"ibfab_port_data_rate_bits_per_second" + ownHCA + "}", 8e9},
		{"ibfab_port_lid" + ownHCA + "}", 3},
		{"ibfab_port_state_id" + ownSw1 + "}", 1},
		{"ibfab_port_physical_state_id" + ownSw1 + "}", 2},
		{"ibfab_node_up{guid=0x0000000000000010,node=ca1,type=hca}", 1},
		{"ibfab_node_up{guid=0x0000000000000030,node=ca2,type=hca}", 0},
		{"ibfab_node_alive{guid=0x0000000000000030,node=ca2,type=hca}", 0},
	}
	for _, tt := range tests {
		v, ok := got[tt.sample]
		if !ok {
			t.Errorf("no sample %s", tt.sample)
			continue
		}
		if v != tt.want {
			t.Errorf("%s = %v, want %v", tt.sample, v, tt.want)
		}
	}
	for k := range got {
		switch {
		case strings.Contains(k, "node=ca2") && !strings.HasPrefix(k, "ibfab_node_"):
			t.Errorf("%s: a node that did not answer has only up and alive", k)
		case strings.HasPrefix(k, "node_infiniband_") && (strings.Contains(k, "node=sw1") || strings.Contains(k, "device=sw1")):
			t.Errorf("%s: node_exporter's families are for HCA ports", k)
		case strings.HasPrefix(k, "infiniband_switch_port") && strings.Contains(k, "node=ca1"):
			t.Errorf("%s: a switch family on an HCA", k)
		}
	}
	if _, ok := got["node_infiniband_rate_bytes_per_second{device=sw1,guid=0x0000000000000020,node=sw1,peer=,port=1}"]; ok {
		t.Error("rate of an untrained port")
	}
}

// TestScrapeError: a fabric that is not up fails the scrape, saying why.
func TestScrapeError(t *testing.T) {
	c := newCollector(func(context.Context) (*harness.FabricStatus, error) { return nil, errors.New(`fabric "x" is not up`) })
	rec := httptest.NewRecorder()
	handlerFor(c).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	if rec.Code != 500 || !strings.Contains(string(body), `fabric "x" is not up`) {
		t.Errorf("scrape of a fabric not up: %d %q", rec.Code, body)
	}
}

func TestPeerNodeName(t *testing.T) {
	for in, want := range map[string]string{"sw1[3]": "sw1", "": "", "a[b][2]": "a[b]"} {
		if got := peerNodeName(in); got != want {
			t.Errorf("peerNodeName(%q) = %q, want %q", in, got, want)
		}
	}
}
