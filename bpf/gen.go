package bpf

// The objects and their Go bindings are generated and committed, so that
// building needs no clang. To regenerate (Debian: clang, llvm, libbpf-dev):
//
//	go generate ./bpf
//
// The -I directories are where Debian keeps <asm/types.h> per architecture.
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -cc clang -cflags "-O2 -g -Wall -Werror -mcpu=v3 -I/usr/include/x86_64-linux-gnu -I/usr/include/aarch64-linux-gnu" -type rule -type rule_stats fault fault.c
