// Package opensmrun runs Debian's unmodified OpenSM once (opensm --once)
// in a network namespace where libumad2sim points it at a simulated port
// (an ibsim, or an ibfab HCA's attach point), and reads what the
// benchmarks compare from the outside: the times in its log, and a port's
// counters as perfquery prints them. Its log also says which engine's
// tables it configured (RoutedWith) and whether its updn found no root
// and fell back to minhop (UpdnFellBack); WriteRootGUIDs writes the root
// GUID file updn takes with -a.
//
// Both sides of a comparison go through the same code, so their figures
// are measured alike:
//
//	r, err := opensmrun.Once(ctx, opensmrun.Options{NS: ns, Env: env, Dir: dir})
//	out, err := opensmrun.Run(ctx, ns, env, "perfquery")
//	smps, err := opensmrun.PerfCounter(out, "PortXmitPkts")
package opensmrun
