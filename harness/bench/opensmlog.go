package bench

import (
	"bufio"
	"strconv"
	"strings"
	"time"
)

// subnetUps returns the time stamps of OpenSM's "SUBNET UP" log lines in
// text ("Nov 25 11:49:36 890272 [4E1BC6C0] 0x02 -> SUBNET UP": local time,
// microseconds; the year is taken as year's).
func subnetUps(text string, year int) []time.Time {
	var out []time.Time
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.Contains(sc.Text(), "SUBNET UP") {
			continue
		}
		t, err := time.ParseInLocation("Jan 2 15:04:05", strings.Join(f[:3], " "), time.Local)
		if err != nil {
			continue
		}
		us, err := strconv.Atoi(f[3])
		if err != nil || us < 0 || us >= 1e6 {
			continue
		}
		out = append(out, t.AddDate(year, 0, 0).Add(time.Duration(us)*time.Microsecond))
	}
	return out
}
