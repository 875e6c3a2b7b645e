// Package updn holds the up*/down* routing engines of the thesis's
// chapter 6, registered as "updn-fera" (FERa, fully explicit) and
// "updn-pira" (PIRa, partially implicit), and the up*/down* orientation
// of a fabric's links they route on (DAG), which the SM's cut-node
// distribution and multipath's fallback layers use too.
package updn
