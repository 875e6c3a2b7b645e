package sm

import (
	"context"

	"ibfab/sm/txn"
)

// The SM sends every SMP through a transaction layer (sm/txn): its
// phases queue requests with callbacks and run them to completion, the
// watch between sweeps waits on it, and what answers nothing (requests,
// traps, SA MADs) comes back through its hooks, which New sets.

// Errors a transaction fails with (txn's, under the names the SM has
// always given them).
var (
	// ErrTimeout: no answer after every retry.
	ErrTimeout = txn.ErrTimeout
	// ErrStatus: the answer carried a non-zero MAD status; the
	// *StatusError says which.
	ErrStatus = txn.ErrStatus
)

// StatusError is a response with a non-zero status.
type StatusError = txn.StatusError

// PhaseStats counts the SMPs of one phase.
type PhaseStats = txn.PhaseStats

// EngineStats counts what arrived that was not an answer.
type EngineStats = txn.EngineStats

// TxnConfig is the transaction layer's configuration (txn.Config): how
// many SMPs are in flight, how long each waits for its answer, and how
// often it is sent.
type TxnConfig = txn.Config

// transactions is the transaction layer as a discovery uses it: queue
// Gets and Sets with their callbacks, and run them to completion. A
// *txn.Layer is one; the SM keeps the layer itself for the rest (phases,
// cancels, waits, counts).
type transactions interface {
	Get(r txn.Request, cb func(*txn.Response))
	Set(r txn.Request, cb func(*txn.Response))
	Run(ctx context.Context) error
}
