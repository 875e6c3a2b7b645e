package smfabric_test

import (
	"ibfab/internal/testsupport/fabrictest"
	"ibfab/nodeproc"
)

// startTraffic has every host send light UD traffic to every other host
// with a LID: the background load the changes happen under, a fifth of
// CheckPairs' (the machine carries ~50k frames/s in all).
func startTraffic(f *fabrictest.Fabric, hosts []string) {
	lid := map[string]uint16{}
	for _, h := range hosts {
		lid[h] = f.Node(h).Ports[0].LID
	}
	for i, h := range hosts {
		var dests []uint16
		for _, o := range hosts {
			if o != h && lid[o] != 0 {
				dests = append(dests, lid[o])
			}
		}
		f.MustCall(h, "traffic-start", nodeproc.TrafficArgs{Port: 1, Load: fabrictest.PairLoad / 5, Payload: 256,
			Dests: dests, Seed: uint64(i + 1)}, nil)
	}
}
