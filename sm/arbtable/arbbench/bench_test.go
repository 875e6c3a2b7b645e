package arbbench

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/sm/arbtable"
)

func quick(ops int) Config {
	return Config{Ops: ops, Models: arbtable.Models, Size: DefaultSize, Seed: 1, Threshold: DefaultThreshold}
}

func TestQuickRun(t *testing.T) {
	rep, err := Run(quick(QuickOps))
	require.NoError(t, err)
	require.Len(t, rep.Models, 4)
	for _, r := range rep.Models {
		t.Run(r.Model, func(t *testing.T) {
			s := r.Stats
			assert.Equal(t, r.Ops, r.Inserted+r.Rejected+r.Deleted)
			var made uint64
			for l := range s.Made {
				assert.Equal(t, s.Made[l], s.Served[l]+s.Rejected[l], "level %d", l)
				made += s.Made[l]
			}
			assert.Equal(t, uint64(r.Inserted+r.Rejected), made)
			assert.Equal(t, uint64(r.Deleted), s.Deleted)
			assert.Zero(t, s.Made[0], "the workload draws levels 1..6")
			// The digest's prototype: 46 / 46 / 8 %.
			assert.InDelta(t, 0.46, float64(r.Inserted)/float64(r.Ops), 0.03)
			assert.InDelta(t, 0.46, float64(r.Deleted)/float64(r.Ops), 0.03)
			assert.InDelta(t, 0.08, float64(r.Rejected)/float64(r.Ops), 0.03)
			assert.Equal(t, s.TotalExchanges(), s.ExchangesAfterInsertion+s.ExchangesAfterDeletion)
			assert.Less(t, r.DroppedPct, 3.0, "the report dropped < 3 %%")
			assert.Positive(t, r.Task("insertion").Kept)
			assert.Positive(t, r.Task("deletion/release/update").Kept)
			assert.Positive(t, r.MeanOpNs)
		})
	}
	m := func(x arbtable.Model) *ModelResult { return rep.Model(x) }
	assert.Less(t, m(arbtable.Model1).ExchangesPerOp, m(arbtable.Model3).ExchangesPerOp)
	assert.LessOrEqual(t, m(arbtable.Model3).ExchangesPerOp, m(arbtable.Model2).ExchangesPerOp)
	assert.Less(t, m(arbtable.Model4).ExchangesPerOp, m(arbtable.Model1).ExchangesPerOp, "the conclusions' proposal")
	// Model1's post-insertion defragmentations rarely exchange.
	m1 := m(arbtable.Model1)
	assert.Less(t, m1.ExchangesAfterInsertionPerOp, m1.ExchangesAfterDeletionPerOp/2)
	assert.Zero(t, m(arbtable.Model4).Stats.ExchangesAfterInsertion)
	assert.Zero(t, m(arbtable.Model1).Stats.Reorderings)
	assert.NotEmpty(t, rep.Ratios)
}

func TestWrite(t *testing.T) {
	c := quick(2000)
	c.Models = []arbtable.Model{arbtable.Model1, arbtable.Model2}
	rep, err := Run(c)
	require.NoError(t, err)
	dir := t.TempDir()
	files, err := Write(rep, filepath.Join(dir, "out"))
	require.NoError(t, err)
	assert.Contains(t, files, filepath.Join(dir, "out", "hist-M2-exchange.png"))
	md, err := os.ReadFile(filepath.Join(dir, "out", "report.md"))
	require.NoError(t, err)
	assert.Contains(t, string(md), "mean time per operation M2/M1")
	assert.Contains(t, string(md), "not comparable")
	for _, f := range files {
		st, err := os.Stat(f)
		require.NoError(t, err)
		assert.Positive(t, st.Size(), f)
	}
}

func TestValidate(t *testing.T) {
	bad := map[string]func(*Config){
		"no ops":       func(c *Config) { c.Ops = 0 },
		"no models":    func(c *Config) { c.Models = nil },
		"model 7":      func(c *Config) { c.Models = []arbtable.Model{7} },
		"size 48":      func(c *Config) { c.Size = 48 },
		"size 2":       func(c *Config) { c.Size = 2 },
		"no threshold": func(c *Config) { c.Threshold = 0 },
	}
	for name, f := range bad {
		c := quick(10)
		f(&c)
		_, err := Run(c)
		assert.Error(t, err, name)
	}
}
