package sm_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"ibfab/sm"
	"ibfab/sm/routing"
	"ibfab/topologies"
)

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  sm.Config
	}{
		{"negative timeout", sm.Config{Timeout: -time.Second}},
		{"negative probe timeout", sm.Config{ProbeTimeout: -time.Millisecond}},
		{"negative retrain timeout", sm.Config{RetrainTimeout: -time.Millisecond}},
		{"window", sm.Config{Window: -1}},
		{"LMC", sm.Config{LMC: 8}},
		{"VL tables", sm.Config{VLTables: sm.VLTablesKeep + 1}},
		{"detection", sm.Config{Detect: sm.DetectSweep + 1}},
		{"discovery", sm.Config{Discovery: sm.DiscoveryFull + 1}},
		{"distribution", sm.Config{Distribution: sm.DistNone + 1}},
		{"PIRa parent", sm.Config{Options: routing.Options{Parent: routing.ParentRandom + 1}}},
		{"FERa ties", sm.Config{Routing: "updn-fera", Options: routing.Options{FERaTies: routing.TieRandom + 1}}},
	}
	b := newBench(t, topologies.Thesis8(), 0, 1)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := sm.New(b.port, tt.cfg)
			assert.ErrorIs(t, err, sm.ErrConfig)
		})
	}
}
