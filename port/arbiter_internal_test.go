package port

import (
	"fmt"
	"slices"
	"testing"

	"ibfab/wire/mad"
)

// tbl builds an arbitration table from (VL, weight) pairs.
func tbl(pairs ...[2]uint8) (t [ArbTableSize]mad.VLArbEntry) {
	for i, p := range pairs {
		t[i] = mad.VLArbEntry{VL: p[0], Weight: p[1]}
	}
	return t
}

// repeat returns n copies of the sequence seq.
func repeat(n int, seq ...int) []int {
	var out []int
	for range n {
		out = append(out, seq...)
	}
	return out
}

// TestArbiterSequence checks the exact order in which the arbiter serves
// VLs that always hold a packet of the given size (in 64-byte blocks; 0:
// none) and credit for it, against IBA §7.6.9.1: weights in 64-byte units
// rounded up to whole packets, weight 0 and VLs without a packet, credit
// or operation skipped, HighLimit × 4096 bytes of high priority then one
// low packet, the high table resuming at the same entry with its residual
// weight, and work conservation both ways.
func TestArbiterSequence(t *testing.T) {
	const big = 33 // blocks: a 2 KiB payload's packet (2112 bytes)
	tests := []struct {
		name     string
		arb      Arbitration
		operVLs  int
		blocks   [4]int  // head packet size per VL, 0: empty
		noCredit [4]bool // VLs whose head packet lacks credit
		want     []int
	}{
		{
			name: "residual weight: limit 1 cuts VL1's 255 units after two packets, VL1 resumes with the rest",
			arb: Arbitration{HighLimit: 1, High: tbl([2]uint8{1, 255}, [2]uint8{2, 255}),
				Low: tbl([2]uint8{0, 1})},
			operVLs: 4, blocks: [4]int{big, big, big, 0},
			// 255 units are 8 packets of 33 blocks (the 8th overshoots);
			// 4096 bytes are 64 blocks, reached by the second packet.
			want: append(repeat(4, 1, 1, 0), repeat(4, 2, 2, 0)...),
		},
		{
			name:    "limit 0: one high packet, then one low",
			arb:     Arbitration{High: tbl([2]uint8{3, 4}), Low: tbl([2]uint8{0, 1}, [2]uint8{1, 1})},
			operVLs: 4, blocks: [4]int{1, 1, 1, 1},
			want: repeat(4, 3, 0, 3, 1),
		},
		{
			name: "limit 255: the high table is never cut short, low starves",
			arb: Arbitration{HighLimit: HighLimitUnbounded, High: tbl([2]uint8{2, 2}, [2]uint8{3, 1}),
				Low: tbl([2]uint8{0, 1})},
			operVLs: 4, blocks: [4]int{1, 1, 1, 1},
			want: repeat(10, 2, 2, 3),
		},
		{
			name:    "weight rounds up to a whole packet: weight 1 sends one 33-block packet",
			arb:     Arbitration{Low: tbl([2]uint8{0, 1}, [2]uint8{1, 1}, [2]uint8{2, 40})},
			operVLs: 4, blocks: [4]int{big, big, big, big},
			want: repeat(5, 0, 1, 2, 2),
		},
		{
			name: "weight 0, VL15, a VL not operational and a VL without packets are skipped",
			arb: Arbitration{Low: tbl([2]uint8{0, 0}, [2]uint8{15, 9}, [2]uint8{5, 9},
				[2]uint8{3, 9}, [2]uint8{1, 2}, [2]uint8{2, 1})},
			operVLs: 4, blocks: [4]int{1, 1, 1, 0},
			want: repeat(5, 1, 1, 2),
		},
		{
			name: "a VL without credit is skipped, the others go on",
			arb: Arbitration{HighLimit: HighLimitUnbounded, High: tbl([2]uint8{1, 1}, [2]uint8{2, 1}),
				Low: tbl([2]uint8{0, 1})},
			operVLs: 4, blocks: [4]int{1, 1, 1, 0}, noCredit: [4]bool{false, true, false, false},
			want: repeat(6, 2),
		},
		{
			name: "work conserving: no high packet, the low table sends",
			arb: Arbitration{HighLimit: 3, High: tbl([2]uint8{2, 9}, [2]uint8{3, 9}),
				Low: tbl([2]uint8{0, 1}, [2]uint8{1, 2})},
			operVLs: 4, blocks: [4]int{1, 1, 0, 0},
			want: repeat(4, 0, 1, 1),
		},
		{
			name:    "work conserving: over its limit, the high table sends while low is empty",
			arb:     Arbitration{High: tbl([2]uint8{2, 1}, [2]uint8{3, 1}), Low: tbl([2]uint8{0, 1})},
			operVLs: 4, blocks: [4]int{0, 0, 1, 1},
			want: repeat(4, 2, 3),
		},
		{
			name:    "empty tables send nothing",
			arb:     Arbitration{},
			operVLs: 4, blocks: [4]int{1, 1, 1, 1},
			want: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a arbiter
			a.set(tt.arb)
			avail := func(vl int) (int, bool) {
				if vl >= len(tt.blocks) || tt.blocks[vl] == 0 || tt.noCredit[vl] {
					return 0, false
				}
				return tt.blocks[vl], true
			}
			var got []int
			for range len(tt.want) + 1 {
				vl, ok := a.pick(tt.operVLs, avail)
				if !ok {
					break
				}
				got = append(got, vl)
			}
			if len(tt.want) > 0 {
				got = got[:min(len(got), len(tt.want))]
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("VLs served:\n got %v\nwant %v", fmt.Sprint(got), fmt.Sprint(tt.want))
			}
		})
	}
}

// TestArbiterHighLimitBytes: between two low-priority packets the high
// table sends HighLimit × 4096 bytes, rounded up to the packet that
// crosses the limit, for every limit below 255.
func TestArbiterHighLimitBytes(t *testing.T) {
	for _, limit := range []uint8{0, 1, 2, 7, 100, 254} {
		for _, blocks := range []int{1, 5, 33, 65} {
			var a arbiter
			a.set(Arbitration{HighLimit: limit, High: tbl([2]uint8{1, 255}, [2]uint8{2, 255}), Low: tbl([2]uint8{0, 1})})
			avail := func(int) (int, bool) { return blocks, true }
			want := max(1, (int(limit)*HighLimitUnit/BlockSize+blocks-1)/blocks) // high packets per low one
			run := 0
			for range 3 * (want + 1) {
				vl, _ := a.pick(4, avail)
				if vl != 0 {
					run++
					continue
				}
				if run != want {
					t.Errorf("limit %d, %d-block packets: %d high packets before a low one, want %d", limit, blocks, run, want)
				}
				run = 0
			}
		}
	}
}
