package partition_test

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"ibfab/sm/partition"
	"ibfab/wire/mad"
)

// FuzzParse: any file is read or refused with an *Error on one of its
// lines, never a panic; a file read gives, on a fresh fabric, tables that
// hold each port's keys once each, switch ports holding them packed, and
// a second run on those tables changes nothing.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"Default=0x7fff, ipoib : ALL=full ;\npfull=0x0010 : 0xa2=full, 0xa3=full ;\nplim=0x0020 : 0xa2, 0xa3, 0xa4=full ;\n",
		"a=0x10, indx0, defmember=full : ALL_CAS, SELF=limited ; b : ALL_SW=b ; : 0xa3 ;",
		"Default=0x7fff,ipoib:\n mgid=ff12:401b::0707,sl=1,mtu=5 # g\n mgid=ff12::1,Q_Key=0xDEADBEEF\n ALL=full;",
		"x=0x8100, mtu=4, rate=3, scope=2, scope=5, sl=1, TClass=2, FlowLabel=7 : 0xa1=f, 0xa2=l, 0xa3=both, NONE ;",
		"0x30 : 0xa4\n, 0xa2 ; y=zz : ;",
		"# only a comment\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := partition.Parse(bytes.NewReader(data), "f.conf")
		if err != nil {
			var pe *partition.Error
			if !errors.As(err, &pe) || pe.Line < 1 || pe.Line > bytes.Count(data, []byte("\n"))+1 {
				t.Fatalf("error %v (%T) names no line of the file", err, err)
			}
			return
		}
		fab := testFabric()
		p, err := partition.Compute(c, fab, partition.EnforceBoth, nil)
		if err != nil {
			var pe *partition.Error
			if !errors.As(err, &pe) {
				t.Fatalf("Compute: %v (%T)", err, err)
			}
			return
		}
		for i, port := range fab.Ports {
			pp := p.Ports[i]
			if len(pp.Table) != 64 {
				t.Fatalf("port %#x: table of %d entries", port.GUID, len(pp.Table))
			}
			var held []mad.PKey
			for _, k := range pp.Table {
				if k.Base() != 0 {
					held = append(held, k)
				}
			}
			if len(pp.Keys) < port.Cap {
				want := slices.Clone(pp.Keys)
				slices.Sort(want)
				got := slices.Clone(held)
				slices.Sort(got)
				if !slices.Equal(want, got) {
					t.Fatalf("port %#x: keys %x, table holds %x", port.GUID, pp.Keys, held)
				}
				if pp.Peer != nil && !slices.Equal(held, pp.Peer[:len(held)]) {
					t.Fatalf("port %#x: switch port holds %x, want %x packed", port.GUID, pp.Peer, held)
				}
			}
			fab.Ports[i].Table = pp.Table
			if port.Peer != nil && pp.Peer != nil {
				fab.Ports[i].Peer.Table = pp.Peer
			}
		}
		again, err := partition.Compute(c, fab, partition.EnforceBoth, p.Memory)
		if err != nil {
			t.Fatal(err)
		}
		for i := range fab.Ports {
			if !slices.Equal(p.Ports[i].Table, again.Ports[i].Table) || !slices.Equal(p.Ports[i].Peer, again.Ports[i].Peer) {
				t.Fatalf("port %#x: second run %x / %x, first %x / %x", fab.Ports[i].GUID,
					again.Ports[i].Table, again.Ports[i].Peer, p.Ports[i].Table, p.Ports[i].Peer)
			}
		}
	})
}
