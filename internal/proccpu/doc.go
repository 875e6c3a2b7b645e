// Package proccpu reads how much CPU a Linux process has used, from
// /proc: what the benchmarks and the thesis run weigh the fabric's
// processes by.
package proccpu
