// Package minhop holds the "minhop" routing engine: shortest paths,
// balanced by the LIDs each port carries, with no promise of deadlock
// freedom (the verifier reports a credit loop).
package minhop
