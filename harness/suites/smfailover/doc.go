// Package smfailover is `ibfab run sm-failover` (issue 21's failover
// suite, also the last suite of `ibfab run all`): two subnet managers,
// ibsm or Debian's OpenSM, on two HCAs of one fabric, the master killed
// under a standby or handing the subnet to an SM of higher priority,
// with traffic running, every SM's SMInfo read every 200 ms and sminfo
// asked from a third HCA. It runs the SMs through package runner's SM
// processes and SMInfo sampler, and registers itself as Experiment in
// the command's table (package suites).
package smfailover
