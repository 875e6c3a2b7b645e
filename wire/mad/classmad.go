package mad

// ClassMADFields are the fields of a MAD of a class whose data follows
// the common header (PMA, the vendor AR class): what a builder sets of
// the header, and the data, an array of the class's data size. The
// versions and the class are the class's own, written by its Encode.
type ClassMADFields[D any] struct {
	Method        Method
	Status        Status
	TransactionID uint64
	AttrID        AttrID
	AttrModifier  uint32
	Data          D
}

// encodeHeader writes m's common header: base version 1, class and
// classVersion, then f's fields.
func (f *ClassMADFields[D]) encodeHeader(m MAD, class MgmtClass, classVersion uint8) {
	m.Encode(&MADFields{
		BaseVersion:   BaseVersion,
		MgmtClass:     class,
		ClassVersion:  classVersion,
		Method:        f.Method,
		Status:        f.Status,
		TransactionID: f.TransactionID,
		AttrID:        f.AttrID,
		AttrModifier:  f.AttrModifier,
	})
}

// classFields reads m's common header into the fields; the caller copies
// the data, whose place is the class's.
func classFields[D any](m MAD) ClassMADFields[D] {
	return ClassMADFields[D]{
		Method:        m.Method(),
		Status:        m.Status(),
		TransactionID: m.TransactionID(),
		AttrID:        m.AttrID(),
		AttrModifier:  m.AttrModifier(),
	}
}
