// Package thesis is `ibfab run thesis`: the joint evaluation of the
// thesis's chapter 8, the basic against the improved mechanism of ibsm
// on irregular fabrics of 8, 16 and 32 switches. On each network it
// calibrates the saturation rate, then deactivates (SIGKILL) and
// activates (restart) switches under uniform traffic at fractions of it,
// timing each assimilation and counting what dropped; the report
// compares the two mechanisms with the thesis's figures. Each network
// and mechanism runs on package runner's SuiteRun; the package registers
// itself as Experiment in the command's table (package suites).
package thesis
