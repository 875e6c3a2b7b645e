package harness_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/harness"
	"ibfab/topologies"
)

func TestTimeScaleFor(t *testing.T) {
	tests := []struct {
		name    string
		rate    uint64
		limit   float64
		want    float64
		comment string
	}{
		{"sdr, fast machine", 8e9, 100e9, 1, "never below 1"},
		{"sdr at the limit", 8e9, 8e9, 3, "2.5 rounds up to 3"},
		{"sdr here", 8e9, 5.05e9, 4, "3.96"},
		{"exactly a step", 8e9, 10e9, 2, "2.0"},
		{"ndr here", 400e9, 4.74e9, 256, "211"},
		{"hdr here", 200e9, 4.74e9, 128, "105"},
		{"xdr slow machine", 800e9, 1e9, 2048, "2000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := harness.TimeScaleFor(tt.rate, harness.MachineLimit{WireBps: tt.limit})
			assert.Equal(t, tt.want, got, tt.comment)
		})
	}
}

func TestMachineLimitFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "sub", "limit.json")
	t.Setenv("IBFAB_LIMIT_FILE", f)
	_, err := harness.LoadMachineLimit()
	require.ErrorIs(t, err, harness.ErrNoMachineLimit, "nothing recorded yet")

	require.Error(t, harness.SaveMachineLimit(0, 2048, "test"), "a zero limit is not recorded")
	require.NoError(t, harness.SaveMachineLimit(5e9, 2048, "test"))
	l, err := harness.LoadMachineLimit()
	require.NoError(t, err)
	assert.Equal(t, 5e9, l.WireBps)
	assert.Equal(t, 2048, l.Payload)
	assert.False(t, l.Measured.IsZero())

	// A record of another machine is no record of this one.
	require.NoError(t, os.WriteFile(f, []byte(`{"wire_bps": 5e9, "machine": "a bigger one × 64"}`), 0o644))
	_, err = harness.LoadMachineLimit()
	assert.ErrorIs(t, err, harness.ErrNoMachineLimit)

	require.NoError(t, os.WriteFile(f, []byte(`{"wire_bps": `), 0o644))
	_, err = harness.LoadMachineLimit()
	require.Error(t, err)
	assert.False(t, errors.Is(err, harness.ErrNoMachineLimit))
	assert.Contains(t, err.Error(), f, "a broken file is named")
}

func TestFastestLink(t *testing.T) {
	topo, err := topologies.Parse(strings.NewReader(mixedRates), "mixed.net")
	require.NoError(t, err)
	bps, name, err := harness.FastestLink(topo)
	require.NoError(t, err)
	assert.Equal(t, uint64(400e9), bps)
	assert.Equal(t, "4xNDR", name)
	require.NoError(t, topo.SetRate(topologies.Rate{Width: topologies.Width2x, Speed: topologies.SpeedHDR}))
	bps, name, err = harness.FastestLink(topo)
	require.NoError(t, err)
	assert.Equal(t, uint64(100e9), bps)
	assert.Equal(t, "2xHDR", name)
}

// mixedRates is a switch with an NDR and an EDR host.
const mixedRates = `
Switch 2 "sw1"
[1] "ca1"[1]		# "ca1" lid 0 4xNDR
[2] "ca2"[1]		# "ca2" lid 0 4xEDR

Hca 1 "ca1"
[1] "sw1"[1]		# lid 0 lmc 0 "sw1" lid 0 4xNDR

Hca 1 "ca2"
[1] "sw1"[2]		# lid 0 lmc 0 "sw1" lid 0 4xEDR
`
