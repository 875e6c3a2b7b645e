// Package runner is the experiment framework of `ibfab run` (package
// harness/suites is the command): it runs failure-injection scenarios on
// the soft fabric and measures them, and gives the experiments what they
// share: a fabric up with its SM, phases, a load point's windows, the
// hosts' flow readings, one Verdict type, the report files and plots.
//
// A Suite is a fabric (a topology), a traffic pattern (every host's
// generator, through the traffic-start control op, to every other host),
// a subnet manager, a timed list of steps (link down/up/flap, node
// kill/restart, hot-add of a piece, eBPF fault rules, SM kill and start)
// and the checks Run applies afterwards. The subnet manager is ibsm with a
// chosen mechanism, run as `ibsm --port sim --json` in an HCA's namespace,
// its JSON lines parsed; or (Options.SM, `ibfab run --sm opensm`) Debian's
// unmodified OpenSM as a daemon at that HCA with libumad2sim preloaded,
// its verbose log read for each heavy sweep and its phases (opensm.go).
// The checks:
//
//   - restored within bound: every port that should be Active is, the
//     others are not, and the SM has reported the subnet up after the last
//     step;
//   - survivors connected: uniform traffic among the hosts still connected
//     to the SM's loses nothing and reaches every one of them;
//   - no data lost (nothing died), or data lost only where a link died:
//     drops only of the causes of a dead link or node;
//   - verifier holds: every ibsm result is up, deadlock-free, without
//     problems (skipped for OpenSM, which reports no route verification);
//   - processes alive: the nodes that should run do, and the SM;
//   - per suite: the fabric stayed Active, LIDs stable, fault rules acted.
//
// A sampler reads every node's status every 200 ms: the hosts' sent and
// received data packets per time bin and every port's drops by cause.
// The report directory holds report.json, traffic.svg/png (packets per
// second around the steps), phases.svg/png (the SM's time and SMPs per
// phase of each sweep and assimilation), ibsm.jsonl or opensm/ (OpenSM's
// log and cache), capture.pcap (one port through the steps) and index.md.
//
// The experiments run on SuiteRun (NewSuiteRun, its exported steps) or,
// for those of load points (cc, afc), on ExperimentRun: packages thesis,
// qos and smfailover beside this one, cc*.go and afc*.go still here.
package runner
