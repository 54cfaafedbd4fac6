//go:build !unix

package transport

func mapPhantom() []byte { return make([]byte, phantomBytes) }
