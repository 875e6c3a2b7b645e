// Package proccpu reads how much CPU a Linux process has used, and its
// resident memory, from /proc: what the benchmarks and the thesis run
// weigh the fabric's processes by, and what the fuzzer watches grow.
package proccpu
