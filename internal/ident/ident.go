// Package ident defines the form of the identifiers the service accepts from outside
// (bikes, renters, rentals, payment references) and makes new random ones.
package ident

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
)

// MaxLength is the longest id the service accepts.
const MaxLength = 64

// Pattern describes a valid id, for error messages and documentation.
const Pattern = "[A-Za-z0-9_-]{1,64}"

// Valid reports whether s matches Pattern.
func Valid(s string) bool {
	if len(s) < 1 || len(s) > MaxLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !alnum(s[i]) && s[i] != '_' && s[i] != '-' {
			return false
		}
	}
	return true
}

// Alphanumeric reports whether s is made only of A-Z, a-z and 0-9.
func Alphanumeric(s string) bool {
	for i := 0; i < len(s); i++ {
		if !alnum(s[i]) {
			return false
		}
	}
	return true
}

func alnum(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' }

const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// Random returns n characters of A-Z, a-z and 0-9 from crypto/rand (about 5.95 bits
// each, without modulo bias).
func Random(n int) string {
	out := make([]byte, 0, n)
	var buf [64]byte
	for len(out) < n {
		rand.Read(buf[:]) // never returns an error (crypto/rand, Go 1.24+)
		for _, b := range buf {
			if b < 248 { // 248 = 4*62: keeps the distribution uniform
				out = append(out, alphabet[int(b)%62])
				if len(out) == n {
					break
				}
			}
		}
	}
	return string(out)
}

// Derived returns n characters of A-Z, a-z and 0-9 determined by parts alone, for ids
// that a retried request must find again (an Idempotency-Key, say). Parts are
// length-prefixed before hashing so that ("ab","c") and ("a","bc") differ.
func Derived(n int, parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		var l [8]byte
		binary.BigEndian.PutUint64(l[:], uint64(len(p)))
		h.Write(l[:])
		h.Write([]byte(p))
	}
	seed := h.Sum(nil)
	out := make([]byte, 0, n)
	for counter := uint64(0); len(out) < n; counter++ {
		block := sha256.Sum256(append(seed, byte(counter)))
		for _, b := range block {
			if b < 248 {
				out = append(out, alphabet[int(b)%62])
				if len(out) == n {
					break
				}
			}
		}
	}
	return string(out)
}

// UUID returns a random (version 4) UUID, the form of event ids.
func UUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
