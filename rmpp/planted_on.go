//go:build ibfab_planted

package rmpp

// plantedSegmentZero: see planted.go.
const plantedSegmentZero = true
