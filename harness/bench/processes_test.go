package bench

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"ibfab/internal/goal"
)

func TestProcessesVerdict(t *testing.T) {
	good := ProcessesReport{UpS: 40, Pss: PssSummary{MeanMiB: 3.1}, IdleCoresBefore: 0.05, IdleCoresAfter: 0.08,
		Traffic: TrafficSummary{Flows: 4, Sent: 4 * processesPackets, Received: 4 * processesPackets}}
	assert.True(t, judge(good).Met)
	for name, bad := range map[string]func(r *ProcessesReport){
		"slow up":   func(r *ProcessesReport) { r.UpS = 61 },
		"fat":       func(r *ProcessesReport) { r.Pss.MeanMiB = 4.2 },
		"busy idle": func(r *ProcessesReport) { r.IdleCoresAfter = 0.2 },
		"lost":      func(r *ProcessesReport) { r.Traffic.Received--; r.Traffic.Lost = 1 },
		"left":      func(r *ProcessesReport) { r.Left = []string{"ibf-x-sw1"} },
		"error":     func(r *ProcessesReport) { r.Errors = []string{"ibsm: no sweep"} },
	} {
		r := good
		bad(&r)
		assert.False(t, judge(r).Met, name)
	}
}

// judge is the verdict processesCase gives r.
func judge(r ProcessesReport) goal.Verdict { return goal.Judge([]goal.Case{processesCase(&r)}) }
