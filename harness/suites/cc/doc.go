// Package cc is `ibfab run cc`: the congestion-control experiments of
// issue 19 (D1-D6), IBA's congestion control against DRB on meshes and
// tori under load sweeps and a hot spot, ibsm the SM with its CC
// configuration, each fabric a runner.ExperimentRun (its load points
// measured with runner.MeasurePoint), the comparisons with the paper
// judged with runner's Verdict. It registers itself as Experiment in the
// command's table (package suites).
package cc
