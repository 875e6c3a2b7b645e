// Package proccpu reads how much CPU a Linux process has used, and its
// resident and proportional memory and its open file descriptors, from
// /proc: what the benchmarks and the thesis run weigh the fabric's
// processes by, and what the fuzzer and the soak watch grow.
package proccpu
