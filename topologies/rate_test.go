package topologies_test

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/topologies"
)

func TestParseRate(t *testing.T) {
	tests := []struct {
		in string
		w  topologies.Width
		s  topologies.Speed
	}{
		{"4xSDR", topologies.Width4x, topologies.SpeedSDR},
		{"4xFDR", topologies.Width4x, topologies.SpeedFDR},
		{"4xEDR", topologies.Width4x, topologies.SpeedEDR},
		{"4xHDR", topologies.Width4x, topologies.SpeedHDR},
		{"2xNDR", topologies.Width2x, topologies.SpeedNDR},
		{"4XNDR", topologies.Width4x, topologies.SpeedNDR},
		{"12xndr", topologies.Width12x, topologies.SpeedNDR},
		{"4xXDR", topologies.Width4x, topologies.SpeedXDR},
	}
	for _, tt := range tests {
		w, s, err := topologies.ParseRate(tt.in)
		require.NoError(t, err, tt.in)
		assert.Equal(t, tt.w, w, tt.in)
		assert.Equal(t, tt.s, s, tt.in)
	}
	for _, bad := range []string{"", "4x", "xNDR", "3xNDR", "4xZDR", "4NDR", "4xNDR2"} {
		_, _, err := topologies.ParseRate(bad)
		require.ErrorIs(t, err, topologies.ErrRate, bad)
		assert.Contains(t, err.Error(), "{1,2,4,8,12}x{SDR,DDR,QDR,FDR10,FDR,EDR,HDR,NDR,XDR}", "the error lists the valid rates")
	}
}

// TestNetFileRates: links of today's rates read from a net file, written
// back as ibnetdiscover prints them, and read again the same.
func TestNetFileRates(t *testing.T) {
	src, err := os.ReadFile("testdata/ibnetdiscover/net.txt")
	require.NoError(t, err)
	// Switch2-Switch1 links at 4xNDR and 2xNDR, the HCAs at HDR and XDR.
	text := string(src)
	for _, r := range []struct{ from, to string }{
		{`"Switch1" lid 0 4xSDR` + "\n[4]", `"Switch1" lid 0 4xNDR` + "\n[4]"},
		{`[4]	"S-0000000000200000"[4]		# "Switch1" lid 0 4xSDR`, `[4]	"S-0000000000200000"[4]		# "Switch1" lid 0 2xNDR`},
		{`[4]	"S-0000000000200001"[4]		# "Switch2" lid 0 4xSDR`, `[4]	"S-0000000000200001"[4]		# "Switch2" lid 0 2xNDR`},
		{`[3]	"S-0000000000200001"[3]		# "Switch2" lid 0 4xSDR`, `[3]	"S-0000000000200001"[3]		# "Switch2" lid 0 4xNDR`},
		{`"Hca2" lid 0 4xSDR`, `"Hca2" lid 0 4xHDR`},
		{`"Switch1" lid 0 4xSDR` + "\n\nvendid", `"Switch1" lid 0 4xHDR` + "\n\nvendid"},
		{`"Hca1" lid 0 4xSDR`, `"Hca1" lid 0 4xXDR`},
	} {
		require.Contains(t, text, r.from)
		text = strings.Replace(text, r.from, r.to, 1)
	}
	text = strings.Replace(text, `[1](100001) 	"S-0000000000200000"[1]		# lid 0 lmc 0 "Switch1" lid 0 4xSDR`,
		`[1](100001) 	"S-0000000000200000"[1]		# lid 0 lmc 0 "Switch1" lid 0 4xXDR`, 1)
	topo, err := topologies.Parse(strings.NewReader(text), "rates.net")
	require.NoError(t, err)
	rates := func(topo *topologies.Topology) map[string]string {
		m := map[string]string{}
		for _, l := range topo.Links() {
			a, b := topo.Node(l.A.Node).Name, topo.Node(l.B.Node).Name
			m[min(a, b)+"/"+max(a, b)+"/"+l.Width.String()+l.Speed.String()] += "."
		}
		return m
	}
	got := rates(topo)
	assert.Equal(t, map[string]string{"S-0000000000200000/S-0000000000200001/4xNDR": ".",
		"S-0000000000200000/S-0000000000200001/2xNDR": ".", "H-0000000000100003/S-0000000000200000/4xHDR": ".",
		"H-0000000000100000/S-0000000000200000/4xXDR": "."}, got)

	var out bytes.Buffer
	require.NoError(t, topologies.Write(&out, topo))
	for _, r := range []string{"4xNDR", "2xNDR", "4xHDR", "4xXDR"} {
		assert.Contains(t, out.String(), r)
	}
	again, err := topologies.Parse(&out, "written.net")
	require.NoError(t, err)
	assert.Equal(t, got, rates(again))
}

// TestNetFileBadRate: an unknown rate names the file and line and lists
// the valid ones.
func TestNetFileBadRate(t *testing.T) {
	src, err := os.ReadFile("testdata/ibnetdiscover/net.txt")
	require.NoError(t, err)
	text := strings.Replace(string(src), `"Switch1" lid 0 4xSDR`, `"Switch1" lid 0 4xZDR`, 1)
	_, err = topologies.Parse(strings.NewReader(text), "bad.net")
	require.Error(t, err)
	assert.True(t, errors.Is(err, topologies.ErrRate), "%v", err)
	assert.Contains(t, err.Error(), `bad.net:11:`)
	assert.Contains(t, err.Error(), `"4xZDR"`)
	assert.Contains(t, err.Error(), "NDR,XDR")
}

func TestRateFlagAndSetRate(t *testing.T) {
	var r topologies.Rate
	require.NoError(t, r.UnmarshalText([]byte("2xNDR")))
	assert.Equal(t, topologies.Rate{Width: topologies.Width2x, Speed: topologies.SpeedNDR}, r)
	assert.Equal(t, "2xNDR", r.String())
	require.ErrorIs(t, r.UnmarshalText([]byte("4xFOO")), topologies.ErrRate)

	topo, err := topologies.FatTree(2, 1, 1)
	require.NoError(t, err)
	require.NoError(t, topo.SetRate(topologies.Rate{Width: topologies.Width4x, Speed: topologies.SpeedHDR}))
	for _, l := range topo.Links() {
		assert.Equal(t, topologies.Width4x, l.Width)
		assert.Equal(t, topologies.SpeedHDR, l.Speed)
	}
	require.NoError(t, topo.SetRate(topologies.Rate{}), "the zero rate changes nothing")
	assert.Equal(t, topologies.SpeedHDR, topo.Links()[0].Speed)
	require.ErrorIs(t, topo.SetRate(topologies.Rate{Width: 3, Speed: topologies.SpeedHDR}), topologies.ErrRate)
}
