//go:build !ibfab_planted

package rmpp

// plantedSegmentZero, true only in a build with the tag ibfab_planted,
// reverts the fix of a DATA with SegmentNumber 0 arriving before any first
// segment: the receiver took it for a repeated segment and ACKed a
// transfer it did not have, and panicked. Such a build exists only to
// show that `ibfab fuzz` finds a bug of this kind in a running SM
// (madfuzz's TestLiveFindsPlantedBug); every other build has the fix.
const plantedSegmentZero = false
