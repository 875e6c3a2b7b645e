package bench

import (
	"strings"
	"time"

	"ibfab/internal/opensmrun"
)

// subnetUps returns the time stamps of OpenSM's "SUBNET UP" log lines in
// text ("Nov 25 11:49:36 890272 [4E1BC6C0] 0x02 -> SUBNET UP"), their year
// chosen near start as opensmrun.LineTime does; lines without a valid time
// stamp are skipped.
func subnetUps(text string, start time.Time) []time.Time {
	var out []time.Time
	for _, line := range strings.Split(text, "\n") {
		if !strings.Contains(line, "SUBNET UP") {
			continue
		}
		if t, err := opensmrun.LineTime(line, start); err == nil {
			out = append(out, t)
		}
	}
	return out
}
