package thesis

import (
	"context"
	"fmt"
	"strings"
	"time"

	"ibfab/harness"
	"ibfab/harness/suites/runner"
	"ibfab/hca"
	"ibfab/internal/proccpu"
	"ibfab/topologies"
)

// thesisRun is one mechanism's run on one network: the suites' runner
// and the generator's packets/s per % of the link rate it calibrated.
type thesisRun struct {
	*runner.SuiteRun
	ppsPerPercent float64
}

// saturationLoad is the offered load (% of the link rate per host) that
// saturates the fabric at any time scale up to 100 (its links' rates,
// not the machine's, bound it there).
const saturationLoad = 5.0

// saturation offers saturationLoad from every host to every other and
// returns the packets per second per host the hosts received, the
// saturation rate, with the generator's packets per second per % of the
// link rate (for linkPercent) and the CPU the fabric's processes used
// meanwhile. A port that went down while it was measured makes it an
// error: the rate would be the machine's starvation, not the fabric's.
func (r *thesisRun) saturation(ctx context.Context, hosts []string) (calibration, error) {
	var c calibration
	st, err := harness.Status(ctx, r.Fabric())
	if err != nil {
		return c, err
	}
	var hostPIDs, switchPIDs []int
	for _, n := range st.Nodes {
		if n.Type == "hca" {
			hostPIDs = append(hostPIDs, n.PID)
		} else {
			switchPIDs = append(switchPIDs, n.PID)
		}
	}
	r.Suite().Load = saturationLoad
	if err := r.StartTraffic(ctx, hosts, hosts); err != nil {
		return c, err
	}
	runner.Sleep(ctx, time.Second)
	a := r.Sample(ctx)
	hostsCPU, switchesCPU := cpuNow(hostPIDs), cpuNow(switchPIDs)
	runner.Sleep(ctx, 2*time.Second)
	b := r.Sample(ctx)
	c.cpu = SaturationCPU{Seconds: b.T - a.T, Hosts: cpuSince(hostsCPU).Seconds(), Switches: cpuSince(switchesCPU).Seconds()}
	var offered float64
	for _, h := range hosts {
		var gs hca.GeneratorStats
		if err := r.Call(ctx, h, "traffic-stop", map[string]int{"port": 1}, &gs); err == nil && gs.Elapsed > 0 {
			offered += float64(gs.Offered) / gs.Elapsed.Seconds()
		}
	}
	r.Drain(ctx)
	if offered == 0 || b.T <= a.T {
		return c, fmt.Errorf("saturation: no traffic measured")
	}
	c.ppsPerPercent = offered / float64(len(hosts)) / saturationLoad
	c.sat = float64(b.Rx-a.Rx) / (b.T - a.T) / float64(len(hosts))
	if len(b.NotActive) > 0 {
		return c, fmt.Errorf("saturation: %.0f packets/s per host measured with ports not Active (%v; CPU %s): %s",
			c.sat, runner.DataDrops(runner.DropsBetween(a, b)), c.cpu, strings.Join(b.NotActive, " "))
	}
	if c.sat >= 0.9*c.ppsPerPercent*saturationLoad {
		return c, fmt.Errorf("saturation: the hosts received %.0f of %.0f packets/s each offered: not saturated", c.sat, c.ppsPerPercent*saturationLoad)
	}
	return c, nil
}

// cpuNow returns the CPU time each of pids has used so far.
func cpuNow(pids []int) map[int]time.Duration {
	out := make(map[int]time.Duration, len(pids))
	for _, pid := range pids {
		if d, err := proccpu.Of(pid); err == nil {
			out[pid] = d
		}
	}
	return out
}

// cpuSince returns the CPU time the processes of before (cpuNow's
// answer) have used since; one gone or restarted since counts nothing.
func cpuSince(before map[int]time.Duration) time.Duration {
	var sum time.Duration
	for pid, d := range before {
		if now, err := proccpu.Of(pid); err == nil && now >= d {
			sum += now - d
		}
	}
	return sum
}

// linkPercent converts packets per second per host into the generator's
// load, % of the link's data rate.
func (r *thesisRun) linkPercent(pps float64) float64 { return pps / r.ppsPerPercent }

// cycle deactivates switch v (SIGKILL) with traffic among all hosts, then
// activates it again (restart) with traffic among the hosts that stayed
// connected, and measures both.
func (r *thesisRun) cycle(ctx context.Context, hosts []string, v, size int, mech string, load float64) ([]ChangeResult, error) {
	name := r.Topology().Node(v).Name
	var rest []string
	for _, h := range hosts {
		i, _ := r.Topology().Lookup(h)
		if peer, ok := r.Topology().Peer(topologies.PortRef{Node: i, Port: 1}); !ok || peer.Node != v {
			rest = append(rest, h)
		}
	}
	var out []ChangeResult
	for _, change := range []string{"deactivation", "activation"} {
		senders := hosts
		if change == "activation" {
			senders = rest
		}
		if err := r.StartTraffic(ctx, senders, senders); err != nil {
			return out, err
		}
		runner.Sleep(ctx, 1500*time.Millisecond)
		p := r.SM()
		from := len(p.Results())
		a := r.Sample(ctx)
		at := time.Now()
		var err error
		if change == "deactivation" {
			err = harness.Kill(r.Fabric(), name)
		} else {
			_, _, err = harness.Restart(r.Fabric(), name, 30*time.Second)
		}
		if err != nil {
			return out, fmt.Errorf("%s of %s: %w", change, name, err)
		}
		dead := map[string]bool{}
		if change == "deactivation" {
			dead[name] = true
		}
		if restored := r.WaitWhole(ctx, at, at, dead, nil, 60*time.Second); restored < 0 {
			return out, fmt.Errorf("%s of %s: not assimilated after 60 s: %s", change, name, r.WhyNot(ctx, at, dead, nil))
		}
		runner.Sleep(ctx, 300*time.Millisecond)
		b := r.Sample(ctx)
		r.StopTraffic(ctx, senders)
		r.Drain(ctx)
		cr := ChangeResult{Size: size, Mechanism: mech, Load: load, Change: change, Switch: name,
			Drops: runner.DataDrops(runner.DropsBetween(a, b)), Sent: b.Tx - a.Tx}
		for _, x := range p.Results()[from:] {
			// An assimilation, or a full sweep when one was needed.
			ms := x.MsTotal
			if x.MsToConnectivity != nil {
				ms = *x.MsToConnectivity
			}
			cr.MsToValid += ms
			cr.MsTotal += x.MsTotal
			cr.SMPs += x.SMPsTotal
		}
		for _, d := range cr.Drops {
			cr.Dropped += d
		}
		r.Logf("%2d switches %-8s %3.0f%%  %-12s %-5s  %8.1f ms to valid tables, %6d SMPs, %7d of %7d packets dropped %v",
			size, mech, load, change, name, cr.MsToValid, cr.SMPs, cr.Dropped, cr.Sent, cr.Drops)
		out = append(out, cr)
	}
	return out, nil
}
