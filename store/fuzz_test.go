package store

import (
	"bytes"
	"strconv"
	"testing"
)

// FuzzParseCounter feeds arbitrary bytes to the parser of a counter, which
// any client may have set to anything before ADD. It must never panic, and
// must agree with strconv.ParseInt on the number std::stoll reads: the
// sign and digits after leading white space.
//
//	go test -run XXX -fuzz FuzzParseCounter ./store
func FuzzParseCounter(f *testing.F) {
	f.Add(strconv.AppendInt(nil, -9223372036854775808, 10))
	f.Add(strconv.AppendInt(nil, 42, 10))
	f.Add([]byte(" \t+7 and more"))
	f.Add([]byte("9223372036854775808"))
	f.Add([]byte("-"))
	f.Add([]byte{})

	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := parseCounter(data)
		num := bytes.TrimLeft(data, " \t\n\v\f\r")
		end := 0
		if end < len(num) && (num[0] == '+' || num[0] == '-') {
			end++
		}
		for end < len(num) && '0' <= num[end] && num[end] <= '9' {
			end++
		}
		want, wantErr := strconv.ParseInt(string(num[:end]), 10, 64)
		if (err == nil) != (wantErr == nil) || err == nil && got != want {
			t.Fatalf("parseCounter(%q) = %d, %v; ParseInt(%q) = %d, %v", data, got, err, num[:end], want, wantErr)
		}
	})
}
