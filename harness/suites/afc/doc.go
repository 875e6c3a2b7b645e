// Package afc is `ibfab run afc`: the adaptive-routing experiments of
// issue 20 (seed 003, E1-E6), D-mod-K, Adaptive, Adaptive-th and AFI
// (adapted-flow isolation) under the queuing schemes 1VC, DBBM, Flow2SL
// and vFtree on RLFT fat trees, uniform and hot-spot traffic, with and
// without VOQs, each fabric a runner.ExperimentRun, the paper's claims a
// table of small functions judged with runner's Verdict. It registers
// itself as Experiment in the command's table (package suites).
package afc
