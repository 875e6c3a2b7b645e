package topologies_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"ibfab/topologies"
)

// FuzzParse feeds Parse arbitrary files. Parse must return a topology or an
// error, never panic; a topology it returns must survive Write and Parse
// again unchanged.
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/ibnetdiscover/*.txt")
	for _, name := range seeds {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("Switch 4 \"a\"\n[1] \"b\"[1] w=12 s=2\n\nCa 1 \"b\"\n[1] \"a\"[1] w=12 s=3\n"))
	f.Add([]byte("switchguid=0x10\nSwitch 2 \"s\" # \"d\" enhanced port 0 lid 3 lmc 1\n[1][ext 4] \"s\"[2]\n[2] \"s\"[1]\n"))
	f.Add([]byte("rtguid=0x30\nRt 1 \"r\" # r\n[1](31) \"c\"[1] (41) # lid 1 lmc 0 \"c\" lid 2 4xHDR\n\ncaguid=0x40\nCa 1 \"c\"\n[1](41) \"r\"[1] # lid 2 lmc 0 \"r\" lid 1 4xHDR\n"))
	f.Add([]byte("width=3\nspeed=7\nextspeed=1\ndo start\nChassis 1\nHca 2 \"h\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tp, err := topologies.Parse(bytes.NewReader(data), "fuzz")
		if err != nil {
			if tp != nil {
				t.Fatalf("Parse(%q) = %v and a topology", data, err)
			}
			return
		}
		var out bytes.Buffer
		if err := topologies.Write(&out, tp); err != nil {
			t.Fatalf("Write: %v", err)
		}
		again, err := topologies.Parse(bytes.NewReader(out.Bytes()), "rewritten")
		if err != nil {
			t.Fatalf("Parse(Write(Parse(%q))) = %v\n%s", data, err, out.Bytes())
		}
		if tp.NumNodes() > 0 && tp.Node(0).Type != topologies.CA && tp.Count(topologies.CA) > 0 {
			// Write moved a CA first; compare what does not depend on order.
			var out2 bytes.Buffer
			if err := topologies.Write(&out2, again); err != nil {
				t.Fatalf("Write: %v", err)
			}
			if tp.NumLinks() != again.NumLinks() || tp.NumNodes() != again.NumNodes() || !bytes.Equal(out.Bytes(), out2.Bytes()) {
				t.Fatalf("Write(Parse(Write(Parse(%q)))) differs:\n%s\n---\n%s", data, out.Bytes(), out2.Bytes())
			}
			return
		}
		if !tp.Equal(again) {
			t.Fatalf("Parse(Write(Parse(%q))) differs:\n%s", data, out.Bytes())
		}
	})
}
