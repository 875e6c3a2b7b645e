// Package tsharktest runs Wireshark's tshark on packets we built and returns
// the fields its dissectors decoded, so tests can cross-check our encoders
// against an independent implementation of the IBA layouts.
package tsharktest
