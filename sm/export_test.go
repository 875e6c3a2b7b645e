package sm

// ComeOut marks s as leaving standby, as a takeover or a handover does:
// its next sweep forgets what it wrote and reads the devices back.
func ComeOut(s *SM) { s.comingOut = true }
