package thesis

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"ibfab/topologies"
)

func TestVictimsKeepSwitchesConnected(t *testing.T) {
	topo, err := topologies.Irregular(16, 4, 1, 1)
	require.NoError(t, err)
	vs := victims(topo, 1, 3)
	require.Len(t, vs, 3)
	for _, v := range vs {
		require.NotEqual(t, 1, v, "the SM's switch")
		require.Equal(t, topologies.Switch, topo.Node(v).Type)
		require.True(t, switchesConnected(topo, v))
	}
	// On the default fabric, sw3 alone holds sw8 and sw9.
	d := topologies.Default()
	i, _ := d.Lookup("sw3")
	require.False(t, switchesConnected(d, i))
}

func TestThesisRows(t *testing.T) {
	rs := []ChangeResult{
		{Size: 8, Load: 25, Mechanism: "basic", Change: "activation", MsToValid: 90, Dropped: 100},
		{Size: 8, Load: 25, Mechanism: "basic", Change: "activation", MsToValid: 110, Dropped: 300},
		{Size: 8, Load: 25, Mechanism: "improved", Change: "activation", MsToValid: 40, Dropped: 10},
		{Size: 8, Load: 25, Mechanism: "basic", Change: "deactivation", MsToValid: 60, Dropped: 400},
		{Size: 8, Load: 25, Mechanism: "improved", Change: "deactivation", MsToValid: 30, Dropped: 100},
	}
	rows := thesisRows(rs, ThesisOptions{Sizes: []int{8}, Loads: []float64{25}})
	require.Len(t, rows, 1)
	r := rows[0]
	require.Equal(t, [2]float64{100, 40}, r.ActMs)
	require.InDelta(t, 2.5, r.TimeRatioAct, 1e-9)
	require.InDelta(t, 2.0, r.TimeRatioDeact, 1e-9)
	require.InDelta(t, 0.95, r.DropCutAct, 1e-9)
	require.InDelta(t, 0.75, r.DropCutDeact, 1e-9)
	table := ThesisTable(&ThesisReport{Rows: rows})
	require.Contains(t, table, "| 8 | 25 % | 100.0 / 40.0 | 2.50× | 1.96× |")
	require.Contains(t, table, "| 200 / 10 | -95 % | -83 % |")
	require.Equal(t, "n/a (basic dropped none)", pct([2]float64{0, 3}))

	dir := t.TempDir()
	require.NoError(t, writeThesis(dir, &ThesisReport{Options: ThesisOptions{Sizes: []int{8}, Loads: []float64{25}}, Results: rs, Rows: rows}))
	for _, f := range []string{"index.md", "thesis.json", "thesis.svg", "thesis.png"} {
		st, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err)
		require.Positive(t, st.Size(), f)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "index.md"))
	require.Contains(t, string(md), "| 8 | 25 % | 100.0 / 40.0 | 2.50× | 1.96× |")
	require.Contains(t, string(md), "![ours against the thesis](thesis.svg)")
}
