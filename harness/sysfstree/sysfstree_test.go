package sysfstree_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ibfab/harness"
	"ibfab/harness/sysfstree"
	"ibfab/nodeproc"
)

func fixture() *harness.FabricStatus {
	hca := nodeproc.Status{Name: "rack 1/h2", Type: "hca", GUID: "0x0002c90300000010", SysImageGUID: "0x0002c90300000010",
		Desc: "h2 HCA-1", Ports: []nodeproc.PortStatus{{
			Port: 1, GUID: "0x0002c90300000011", Phys: "LinkUp", State: "Active", LID: 0x1b, Width: "4X", Speed: "NDR",
			LMC: 1, SMLID: 1, CapMask: 0x0251084a, PKeys: []string{"0xffff", "0x8001"},
			Counters: nodeproc.Counters{PortXmitData: 1000, PortRcvData: 500, PortXmitPkts: 10, PortRcvPkts: 5, PortXmitWait: 3},
		}}}
	sw := nodeproc.Status{Name: "sw1", Type: "switch", GUID: "0x20", Ports: []nodeproc.PortStatus{{Port: 1}}}
	dead := nodeproc.Status{Name: "ca9", Type: "hca", GUID: "0x30", Ports: []nodeproc.PortStatus{{Port: 1}}}
	return &harness.FabricStatus{Nodes: []harness.NodeStatus{{Status: hca, Alive: true}, {Status: sw, Alive: true},
		{Status: dead, Error: "process not running"}}}
}

// TestWrite: the tree of an HCA, file by file in the kernel's formats;
// switches and HCAs that did not answer have none.
func TestWrite(t *testing.T) {
	devs, err := sysfstree.Devices(fixture())
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := sysfstree.WriteDevices(root, devs); err != nil {
		t.Fatal(err)
	}
	// Twice: the second finds the files as they are.
	if err := sysfstree.WriteDevices(root, devs); err != nil {
		t.Fatal(err)
	}
	base := sysfstree.Dir(root)
	ents, _ := os.ReadDir(base)
	if len(ents) != 1 || ents[0].Name() != "rack_1_h2" {
		t.Fatalf("devices %v, want rack_1_h2 only", ents)
	}
	for path, want := range map[string]string{
		"node_type":                                "1: CA",
		"node_guid":                                "0002:c903:0000:0010",
		"sys_image_guid":                           "0002:c903:0000:0010",
		"node_desc":                                "h2 HCA-1",
		"fw_ver":                                   "1.0.0",
		"board_id":                                 "ibfab",
		"hca_type":                                 "ibfab",
		"ports/1/state":                            "4: ACTIVE",
		"ports/1/phys_state":                       "5: LinkUp",
		"ports/1/rate":                             "400 Gb/sec (4X NDR)",
		"ports/1/lid":                              "0x1b",
		"ports/1/lid_mask_count":                   "1",
		"ports/1/sm_lid":                           "0x1",
		"ports/1/sm_sl":                            "0",
		"ports/1/cap_mask":                         "0x0251084a",
		"ports/1/link_layer":                       "InfiniBand",
		"ports/1/gids/0":                           "fe80:0000:0000:0000:0002:c903:0000:0011",
		"ports/1/pkeys/0":                          "0xffff",
		"ports/1/pkeys/1":                          "0x8001",
		"ports/1/counters/port_xmit_data":          "1000",
		"ports/1/counters/port_rcv_data":           "500",
		"ports/1/counters/port_xmit_wait":          "3",
		"ports/1/counters/symbol_error":            "0",
		"ports/1/counters_ext/port_xmit_data_64":   "1000",
		"ports/1/counters_ext/port_rcv_packets_64": "5",
	} {
		b, err := os.ReadFile(filepath.Join(base, "rack_1_h2", path))
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		if got := string(b); got != want+"\n" {
			t.Errorf("%s = %q, want %q", path, got, want+"\n")
		}
	}
	// No temporary file is left.
	filepath.WalkDir(base, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), ".") {
			t.Errorf("left over: %s", p)
		}
		return nil
	})
}

func TestErrors(t *testing.T) {
	s := fixture()
	twin := s.Nodes[0]
	twin.Name = "rack_1/h2"
	s.Nodes = append(s.Nodes, twin)
	if _, err := sysfstree.Devices(s); err == nil || !strings.Contains(err.Error(), "both be device rack_1_h2") {
		t.Errorf("two nodes, one device: %v", err)
	}
	bad := fixture()
	bad.Nodes[0].GUID = "0xzz"
	if _, err := sysfstree.Devices(bad); err == nil {
		t.Error("a GUID not in hex: no error")
	}
	devs, _ := sysfstree.Devices(fixture())
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := sysfstree.WriteDevices(file, devs); err == nil || !strings.Contains(err.Error(), "cannot write the tree under") {
		t.Errorf("a file as the directory: %v", err)
	}
}
