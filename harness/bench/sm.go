package bench

import (
	"context"
	"flag"

	"ibfab/harness"
	"ibfab/harness/bench/smbench"
	"ibfab/internal/cli"
)

var smBench = benchmark{
	name:     "sm",
	synopsis: "bench sm [--fabrics LIST] [--runs N] [--routing ENGINE] [--vl-tables keep|set] [--qos=false] [--route-nets LIST] [--route-iters N] [--ibsm BIN] [--quick] [--out FILE]",
	desc: `ibsm against OpenSM on the same ibsim fabrics (once ibsm bench).
On each fabric, a fresh simulator per run, ibsm (the binary) and
opensm --once with the matching engine bring the subnet up, with both
SMs' defaults (subnet_up) and with QoS on both sides (subnet_up_qos);
the routing engines are compared with each other through the sm API on
the route networks. Goal: ibsm's ms_to_up at most 0.5 of OpenSM's and its
smps_wire at most OpenSM's on every fabric. --quick: thesis8 and
irregular16, one run each. --name is not used: the simulators'
namespaces are named by their package.`,
	flags: func(fs *flag.FlagSet, c *common) func() (any, bool, error) {
		check := smbench.Flags(fs)
		return func() (any, bool, error) {
			o, err := check()
			if err != nil {
				return nil, false, &cli.UsageError{Cmd: "bench sm", Usage: "bench sm -h", Err: err}
			}
			if c.quick {
				o.Quick()
			}
			if len(o.Fabrics) > 0 {
				// The routing comparison alone runs anywhere.
				if err := requireRoot(); err != nil {
					return nil, false, err
				}
				if o.IBSM == "" {
					if o.IBSM, err = harness.Binary("ibsm"); err != nil {
						return nil, false, err
					}
				}
			}
			rep, failed := smbench.Run(context.Background(), o, c.log)
			return rep, failed, nil
		}
	},
}
