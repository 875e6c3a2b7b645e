package main

import (
	"fmt"
	"strconv"

	"ibfab/madport"
	"ibfab/madport/softumad"
	"ibfab/madport/umad"
	"ibfab/sm"
)

// The softumad scheme: "softumad" or "softumad:PORT", a soft HCA's port
// through its kernel-semantics MAD endpoint (package umadep), with the
// umad port's code: what ibsm does on a real HCA, run from the HCA's
// namespace (ibfab exec NODE -- ibsm --port softumad). The endpoint's
// socket is $IBFAB_UMAD_SOCKET or its default.
func init() {
	sm.RegisterPort("softumad", openSoftUMAD)
}

func openSoftUMAD(arg string) (madport.Port, error) {
	port := 1
	if arg != "" {
		n, err := strconv.ParseUint(arg, 10, 8)
		if err != nil || n == 0 || n > 254 {
			return nil, fmt.Errorf("softumad:%s: want a port number from 1 to 254", arg)
		}
		port = int(n)
	}
	return umad.Open(umad.Config{CA: softumad.CA, Port: port, Timeout: umadTimeout, Files: softumad.Files("")})
}
