// Package smfabric holds the subnet manager's tests on the soft fabric
// (package harness): ibsm's change assimilation (package sm) running in an
// HCA's namespace while UD traffic flows, links are cut and switch
// processes killed and restarted, every intermediate forwarding state its
// distribution goes through checked by the verifier. The measurement
// against OpenSM is ibfab bench assimilation (package harness/bench). It
// has no code of its own; the tests need root.
package smfabric
