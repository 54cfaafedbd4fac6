package tcpstore

// Registrations counts the WAIT and BARRIER calls the server holds, so that
// tests can tell when a peer has started waiting.
func Registrations(s *Server) int {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	n := 0
	for _, rs := range s.st.live {
		n += len(rs)
	}
	return n
}
