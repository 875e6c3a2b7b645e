// Package arbbench is the evaluation of the arbitration-table management
// models (package arbtable) after the report that proposed them: a long
// random sequence of insertions and deletions per model, every task timed,
// and the counts and ratios set beside the report's figures. ibsm
// arbtable-bench is its command.
package arbbench
