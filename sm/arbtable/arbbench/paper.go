package arbbench

// The report's figures (Cuadros 3-6 of DIAB-04-12-1), in µs on a 2004 PC,
// for its Models 1-3; index 0 is Model1. Cuadro 3 prints Model1's
// defragmentation search and exchange under swapped labels (Cuadro 6 has
// them the right way round); these are corrected.
var (
	paperMeanOp     = [3]float64{29.045, 30.538, 29.979}
	paperExchanges  = [3]float64{0.0715, 0.1207, 0.1126}
	paperInsertion  = [3]float64{29.516, 20.463, 19.740}
	paperDeletion   = [3]float64{32.669, 45.690, 44.758}
	paperFailed     = [3]float64{4.507, 4.815, 4.731}
	paperOccSearch  = [3]float64{2.298, 2.448, 2.236}
	paperDelDefragX = [3]float64{35.236, 46.188, 49.257} // exchange in the defragmentation after a deletion
	paperDelDefragS = [3]float64{2.356, 2.574, 2.457}    // its search
)

// Model2's shares of calls with at least one exchange (Cuadro 6).
const (
	paperM2ReorderWithExchangePct = 9.05
	paperM2DefragWithExchangePct  = 8.72
)
