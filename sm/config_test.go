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
		{"negative timeout", sm.Config{TxnConfig: sm.TxnConfig{Timeout: -time.Second}}},
		{"negative probe timeout", sm.Config{TxnConfig: sm.TxnConfig{ProbeTimeout: -time.Millisecond}}},
		{"negative retrain timeout", sm.Config{
			AssimilationConfig: sm.AssimilationConfig{RetrainTimeout: -time.Millisecond},
		}},
		{"window", sm.Config{TxnConfig: sm.TxnConfig{Window: -1}}},
		{"LMC", sm.Config{LIDConfig: sm.LIDConfig{LMC: 8}}},
		{"VL tables", sm.Config{PortConfig: sm.PortConfig{VLTables: sm.VLTablesKeep + 1}}},
		{"detection", sm.Config{AssimilationConfig: sm.AssimilationConfig{Detect: sm.DetectSweep + 1}}},
		{"discovery", sm.Config{AssimilationConfig: sm.AssimilationConfig{Discovery: sm.DiscoveryFull + 1}}},
		{"distribution", sm.Config{AssimilationConfig: sm.AssimilationConfig{Distribution: sm.DistNone + 1}}},
		{"PIRa parent", sm.Config{
			RoutingConfig: sm.RoutingConfig{Options: routing.Options{Parent: routing.ParentRandom + 1}},
		}},
		{"FERa ties", sm.Config{
			RoutingConfig: sm.RoutingConfig{Routing: "updn-fera", Options: routing.Options{FERaTies: routing.TieRandom + 1}},
		}},
	}
	b := newBench(t, topologies.Thesis8(), 0, 1)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := sm.New(b.port, tt.cfg)
			assert.ErrorIs(t, err, sm.ErrConfig)
		})
	}
}
