package softswitch

import (
	"fmt"
	"testing"

	"ibfab/agent"
	"ibfab/wire/mad"
)

// fakePorts is an arPorts whose occupancies a test sets: down[out][vl]
// as used/capacity, every port Active unless listed in inactive. A packet
// takes VL sl to every output but those vlOf maps.
type fakePorts struct {
	down     map[uint8]map[uint8][2]int
	inactive map[uint8]bool
	vlOf     map[uint8]uint8
}

func (f fakePorts) vlFor(_, out, sl uint8) uint8 {
	if v, ok := f.vlOf[out]; ok {
		return v
	}
	return sl
}

func (f fakePorts) downstream(out, vl uint8) (used, capacity int, active bool) {
	uc, ok := f.down[out][vl]
	if !ok {
		uc = [2]int{0, 100}
	}
	return uc[0], uc[1], !f.inactive[out]
}

// occ is a shorthand: output → VL → used of 100 blocks.
func occ(m map[uint8]map[uint8]int) map[uint8]map[uint8][2]int {
	out := map[uint8]map[uint8][2]int{}
	for o, vls := range m {
		out[o] = map[uint8][2]int{}
		for vl, u := range vls {
			out[o][vl] = [2]int{u, 100}
		}
	}
	return out
}

// TestDecide: each mode's choice of output port and VL, the ties, the
// threshold, the AFC and the adapt-once rule. Port 1 is the input, port 2
// the LFT's (det), the alternatives 2, 3 and 4; T = 75 %, AFC = VL 3.
func TestDecide(t *testing.T) {
	const in, det, afc = 1, 2, 3
	alts := []uint8{2, 3, 4}
	type want struct {
		out, vl uint8
		mark    bool
	}
	for _, tc := range []struct {
		name    string
		mode    mad.ARMode
		ports   fakePorts
		alts    []uint8
		in      uint8
		adapted bool
		want    want
	}{
		{name: "off: the LFT, however full", mode: mad.AROff,
			ports: fakePorts{down: occ(map[uint8]map[uint8]int{2: {0: 100}})}, want: want{det, 0, false}},

		{name: "adaptive: a quiet fabric keeps the LFT port", mode: mad.ARAdaptive, want: want{det, 0, false}},
		{name: "adaptive: least occupied", mode: mad.ARAdaptive,
			ports: fakePorts{down: occ(map[uint8]map[uint8]int{2: {0: 50}, 3: {0: 20}, 4: {0: 30}})}, want: want{3, 0, false}},
		{name: "adaptive: tie between alternatives to the lowest port", mode: mad.ARAdaptive, alts: []uint8{4, 3, 2},
			ports: fakePorts{down: occ(map[uint8]map[uint8]int{2: {0: 50}, 3: {0: 20}, 4: {0: 20}})}, want: want{3, 0, false}},
		{name: "adaptive: tie with the LFT port to it", mode: mad.ARAdaptive,
			ports: fakePorts{down: occ(map[uint8]map[uint8]int{2: {0: 20}, 3: {0: 20}, 4: {0: 20}})}, want: want{det, 0, false}},
		{name: "adaptive: fractions of each port's capacity", mode: mad.ARAdaptive,
			ports: fakePorts{down: map[uint8]map[uint8][2]int{2: {0: {60, 200}}, 3: {0: {100, 400}}, 4: {0: {90, 100}}}},
			want:  want{3, 0, false}},
		{name: "adaptive: the LFT port not Active", mode: mad.ARAdaptive,
			ports: fakePorts{inactive: map[uint8]bool{2: true, 4: true}, down: occ(map[uint8]map[uint8]int{3: {0: 90}})},
			want:  want{3, 0, false}},
		{name: "adaptive: nothing Active, the LFT port", mode: mad.ARAdaptive,
			ports: fakePorts{inactive: map[uint8]bool{2: true, 3: true, 4: true}}, want: want{det, 0, false}},
		{name: "adaptive: never the input port", mode: mad.ARAdaptive, in: 3,
			ports: fakePorts{down: occ(map[uint8]map[uint8]int{2: {0: 50}, 3: {0: 0}, 4: {0: 60}})}, want: want{det, 0, false}},
		{name: "adaptive: a VL never credited counts as full", mode: mad.ARAdaptive,
			ports: fakePorts{down: map[uint8]map[uint8][2]int{2: {0: {99, 100}}, 3: {0: {0, 0}}, 4: {0: {0, 0}}}},
			want:  want{det, 0, false}},
		{name: "adaptive: each output's own SLtoVL", mode: mad.ARAdaptive,
			ports: fakePorts{vlOf: map[uint8]uint8{3: 1, 4: 1},
				down: occ(map[uint8]map[uint8]int{2: {0: 50}, 3: {0: 0, 1: 90}, 4: {0: 0, 1: 40}})},
			want: want{4, 1, false}},

		{name: "adaptive-th: under the threshold, the LFT port", mode: mad.ARAdaptiveTh,
			ports: fakePorts{down: occ(map[uint8]map[uint8]int{2: {0: 74}})}, want: want{det, 0, false}},
		{name: "adaptive-th: at the threshold, the least occupied", mode: mad.ARAdaptiveTh,
			ports: fakePorts{down: occ(map[uint8]map[uint8]int{2: {0: 75}, 3: {0: 10}, 4: {0: 5}})}, want: want{4, 0, false}},
		{name: "adaptive-th: the LFT port wins a tie", mode: mad.ARAdaptiveTh,
			ports: fakePorts{down: occ(map[uint8]map[uint8]int{2: {0: 80}, 3: {0: 80}, 4: {0: 90}})}, want: want{det, 0, false}},
		{name: "adaptive-th: the LFT port not Active", mode: mad.ARAdaptiveTh,
			ports: fakePorts{inactive: map[uint8]bool{2: true}, down: occ(map[uint8]map[uint8]int{3: {0: 50}, 4: {0: 60}})},
			want:  want{3, 0, false}},
		{name: "adaptive-th: no Active alternative", mode: mad.ARAdaptiveTh,
			ports: fakePorts{inactive: map[uint8]bool{3: true, 4: true}, down: occ(map[uint8]map[uint8]int{2: {0: 90}})},
			alts:  []uint8{3, 4}, want: want{det, 0, false}},

		{name: "afi: adapted once, the LFT port on the AFC", mode: mad.ARAFI, adapted: true,
			ports: fakePorts{down: occ(map[uint8]map[uint8]int{2: {0: 100, afc: 100}})}, want: want{det, afc, false}},
		{name: "afi: under the threshold, the LFT port on its VL", mode: mad.ARAFI,
			ports: fakePorts{down: occ(map[uint8]map[uint8]int{2: {0: 10}})}, want: want{det, 0, false}},
		{name: "afi: over it, the least occupied AFC, marked", mode: mad.ARAFI,
			ports: fakePorts{down: occ(map[uint8]map[uint8]int{2: {0: 80, afc: 50}, 3: {0: 0, afc: 90}, 4: {0: 90, afc: 10}})},
			want:  want{4, afc, true}},
		{name: "afi: the LFT port's AFC may be the least", mode: mad.ARAFI,
			ports: fakePorts{down: occ(map[uint8]map[uint8]int{2: {0: 80, afc: 0}, 3: {afc: 10}, 4: {afc: 10}})},
			want:  want{det, afc, true}},
		{name: "afi: no Active alternative, unmarked", mode: mad.ARAFI, alts: []uint8{3, 4},
			ports: fakePorts{inactive: map[uint8]bool{3: true, 4: true}, down: occ(map[uint8]map[uint8]int{2: {0: 90}})},
			want:  want{det, 0, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := tc.alts
			if a == nil {
				a = alts
			}
			i := tc.in
			if i == 0 {
				i = in
			}
			table := agent.NewARTable(tc.mode, 75, afc, nil, nil)
			out, vl, mark := decide(table, tc.ports, i, det, 0, tc.adapted, a)
			if got := (want{out, vl, mark}); got != tc.want {
				t.Errorf("decide = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestOccupancy(t *testing.T) {
	for _, tc := range []struct {
		used, capacity int
		active         bool
		want           uint32
	}{
		{0, 100, true, 0},
		{50, 100, true, occFull / 2},
		{100, 100, true, occFull},
		{150, 100, true, occFull}, // in flight beyond a shrunk buffer
		{0, 0, true, occFull},
		{0, 100, false, occNotActive},
	} {
		t.Run(fmt.Sprint(tc), func(t *testing.T) {
			if got := occupancy(tc.used, tc.capacity, tc.active); got != tc.want {
				t.Errorf("occupancy = %d, want %d", got, tc.want)
			}
		})
	}
}
