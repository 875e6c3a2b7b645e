package ibsysfs_test

import (
	"testing"

	"ibfab/ibsysfs"
	"ibfab/wire/mad"
)

// TestRate: the rate file as the kernel writes it, whose number libibumad
// (ibstat's "Rate:") and node_exporter read.
func TestRate(t *testing.T) {
	tests := []struct {
		w    mad.LinkWidth
		s    mad.LinkSpeed
		want string
	}{
		{mad.LinkWidth1X, mad.LinkSpeedSDR, "2.5 Gb/sec (1X SDR)"},
		{mad.LinkWidth4X, mad.LinkSpeedSDR, "10 Gb/sec (4X SDR)"},
		{mad.LinkWidth4X, mad.LinkSpeedQDR, "40 Gb/sec (4X QDR)"},
		{mad.LinkWidth4X, mad.LinkSpeedFDR, "56 Gb/sec (4X FDR)"},
		{mad.LinkWidth4X, mad.LinkSpeedEDR, "100 Gb/sec (4X EDR)"},
		{mad.LinkWidth4X, mad.LinkSpeedHDR, "200 Gb/sec (4X HDR)"},
		{mad.LinkWidth2X, mad.LinkSpeedNDR, "200 Gb/sec (2X NDR)"},
		{mad.LinkWidth4X, mad.LinkSpeedNDR, "400 Gb/sec (4X NDR)"},
		{mad.LinkWidth4X, mad.LinkSpeedXDR, "800 Gb/sec (4X XDR)"},
		{0, mad.LinkSpeedNDR, "0 Gb/sec"},
	}
	for _, tt := range tests {
		if got := ibsysfs.Rate(tt.w, tt.s); got != tt.want {
			t.Errorf("Rate(%v, %v) = %q, want %q", tt.w, tt.s, got, tt.want)
		}
	}
}

// TestStrings: the other one-line files in the kernel's formats.
func TestStrings(t *testing.T) {
	for _, tt := range []struct{ got, want string }{
		{ibsysfs.State(mad.PortStateActive), "4: ACTIVE"},
		{ibsysfs.State(mad.PortStateDown), "1: DOWN"},
		{ibsysfs.State(mad.PortStateNoChange), "0: NOP"},
		{ibsysfs.State(9), "9: UNKNOWN"},
		{ibsysfs.PhysState(mad.PhysStateLinkUp), "5: LinkUp"},
		{ibsysfs.PhysState(mad.PhysStatePolling), "2: Polling"},
		{ibsysfs.PhysState(mad.PhysStatePhyTest), "7: Phy Test"},
		{ibsysfs.PhysState(mad.PhysStateNoChange), "0: <unknown>"},
		{ibsysfs.LID(0x1b), "0x1b"},
		{ibsysfs.LID(0), "0x0"},
		{ibsysfs.CapMask(0x2651084a), "0x2651084a"},
		{ibsysfs.CapMask(0x48), "0x00000048"},
		{ibsysfs.GUID(0x0002c90300001234), "0002:c903:0000:1234"},
		{ibsysfs.GID(0xfe80000000000000, 0x0002c90300001234), "fe80:0000:0000:0000:0002:c903:0000:1234"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

// TestParse: ibfab status's names of states, widths and speeds back to
// their codes.
func TestParse(t *testing.T) {
	for _, s := range []mad.PortState{mad.PortStateDown, mad.PortStateInit, mad.PortStateArmed, mad.PortStateActive} {
		if got, ok := ibsysfs.ParsePortState(s.String()); !ok || got != s {
			t.Errorf("ParsePortState(%q) = %v, %v", s.String(), got, ok)
		}
	}
	for _, s := range []mad.PhysState{mad.PhysStatePolling, mad.PhysStateLinkUp, mad.PhysStateDisabled} {
		if got, ok := ibsysfs.ParsePhysState(s.String()); !ok || got != s {
			t.Errorf("ParsePhysState(%q) = %v, %v", s.String(), got, ok)
		}
	}
	if w, ok := ibsysfs.ParseWidth("4X"); !ok || w != mad.LinkWidth4X {
		t.Errorf("ParseWidth(4X) = %v, %v", w, ok)
	}
	if s, ok := ibsysfs.ParseSpeed("NDR"); !ok || s != mad.LinkSpeedNDR {
		t.Errorf("ParseSpeed(NDR) = %v, %v", s, ok)
	}
	for _, bad := range []string{"", "Unknown", "4X|1X"} {
		if _, ok := ibsysfs.ParsePortState(bad); ok {
			t.Errorf("ParsePortState(%q) ok", bad)
		}
		if _, ok := ibsysfs.ParseWidth(bad); ok {
			t.Errorf("ParseWidth(%q) ok", bad)
		}
	}
}

// TestFiles: the files of a port directory and its counters, by the
// kernel's names, counts in decimal and the data in 4-byte words.
func TestFiles(t *testing.T) {
	p := ibsysfs.PortFiles(ibsysfs.Port{State: mad.PortStateActive, Phys: mad.PhysStateLinkUp, Width: mad.LinkWidth4X,
		Speed: mad.LinkSpeedNDR, LID: 0x12, LMC: 2, SMLID: 1, SMSL: 0, CapMask: 0x0251084a,
		GIDPrefix: 0xfe80000000000000, GUID: 0x0002c90300001235})
	want := map[string]string{"lid": "0x12\n", "lid_mask_count": "2\n", "sm_lid": "0x1\n", "sm_sl": "0\n",
		"state": "4: ACTIVE\n", "phys_state": "5: LinkUp\n", "rate": "400 Gb/sec (4X NDR)\n",
		"cap_mask": "0x0251084a\n", "link_layer": "InfiniBand\n", "gids/0": "fe80:0000:0000:0000:0002:c903:0000:1235\n"}
	checkFiles(t, p, want)
	c := ibsysfs.Counters{XmitData: 1 << 40, RcvData: 7, XmitPkts: 3, RcvPkts: 4, XmitWait: 99, VL15Dropped: 1}
	checkFiles(t, ibsysfs.CounterFiles(c), map[string]string{"port_xmit_data": "1099511627776\n",
		"port_rcv_data": "7\n", "port_xmit_packets": "3\n", "port_rcv_packets": "4\n", "port_xmit_wait": "99\n",
		"VL15_dropped": "1\n", "symbol_error": "0\n", "link_downed": "0\n", "port_rcv_errors": "0\n",
		"link_error_recovery": "0\n", "port_rcv_remote_physical_errors": "0\n", "port_rcv_switch_relay_errors": "0\n",
		"port_xmit_discards": "0\n", "port_xmit_constraint_errors": "0\n", "port_rcv_constraint_errors": "0\n",
		"local_link_integrity_errors": "0\n", "excessive_buffer_overrun_errors": "0\n"})
	checkFiles(t, ibsysfs.CounterExtFiles(c), map[string]string{"port_xmit_data_64": "1099511627776\n",
		"port_rcv_data_64": "7\n", "port_xmit_packets_64": "3\n", "port_rcv_packets_64": "4\n"})
	checkFiles(t, ibsysfs.NodeFiles(ibsysfs.Node{GUID: 0x20, SysImageGUID: 0x21, Desc: "ca4 HCA-1"}), map[string]string{
		"node_type": "1: CA\n", "node_guid": "0000:0000:0000:0020\n", "sys_image_guid": "0000:0000:0000:0021\n",
		"node_desc": "ca4 HCA-1\n", "fw_ver": "1.0.0\n", "hw_rev": "0\n", "hca_type": "ibfab\n", "board_id": "ibfab\n"})
}

func checkFiles(t *testing.T, got []ibsysfs.File, want map[string]string) {
	t.Helper()
	seen := map[string]bool{}
	for _, f := range got {
		if seen[f.Name] {
			t.Errorf("%s twice", f.Name)
		}
		seen[f.Name] = true
		if w, ok := want[f.Name]; !ok {
			t.Errorf("unexpected file %s", f.Name)
		} else if f.Content != w {
			t.Errorf("%s = %q, want %q", f.Name, f.Content, w)
		}
	}
	for name := range want {
		if !seen[name] {
			t.Errorf("no file %s", name)
		}
	}
}

func TestDeviceName(t *testing.T) {
	for in, want := range map[string]string{"ca4": "ca4", "rack 1/h2": "rack_1_h2", "h-1.x_y": "h-1.x_y", "..": "_", "é": "__"} {
		if got := ibsysfs.DeviceName(in); got != want {
			t.Errorf("DeviceName(%q) = %q, want %q", in, got, want)
		}
	}
}
