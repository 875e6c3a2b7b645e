package bench

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestSubnetUps(t *testing.T) {
	log := `Nov 25 11:49:36 890272 [4E1BC6C0] 0x02 -> SUBNET UP
Nov 25 11:49:37 000001 [4E1BC6C0] 0x01 -> log_trap_info: Received Generic Notice
Nov 05 09:01:02 000007 [4E1BC6C0] 0x02 -> SUBNET UP
garbage SUBNET UP
Nov 25 11:49:36 99999999 [4E1BC6C0] 0x02 -> SUBNET UP
`
	start := time.Date(2026, 11, 26, 12, 0, 0, 0, time.Local)
	got := subnetUps(log, start)
	want := []time.Time{
		time.Date(2026, 11, 25, 11, 49, 36, 890272000, time.Local),
		time.Date(2026, 11, 5, 9, 1, 2, 7000, time.Local),
	}
	assert.Equal(t, len(want), len(got))
	for i := range want {
		if i < len(got) {
			assert.True(t, want[i].Equal(got[i]), "line %d: %v, want %v", i, got[i], want[i])
		}
	}
	assert.Empty(t, subnetUps("", start))
}
