// Package ident defines the form of the identifiers the service accepts from outside
// (bikes, renters, rentals, payment references) and makes new random ones.
package ident

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
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
// length-prefixed before hashing so that ("ab","c") and ("a","bc") differ. The
// result must never change for the same arguments: stored ids depend on it.
func Derived(n int, parts ...string) string {
	// The seed is SHA-256 of every part's 8-byte big-endian length and its bytes;
	// block i is SHA-256 of the seed followed by the byte i. The buffers live on the
	// stack for the short inputs and outputs ids are made of.
	var inBuf [256]byte
	in := inBuf[:0]
	for _, p := range parts {
		in = binary.BigEndian.AppendUint64(in, uint64(len(p)))
		in = append(in, p...)
	}
	var seed [sha256.Size + 1]byte
	sum := sha256.Sum256(in)
	copy(seed[:], sum[:])
	var outBuf [64]byte
	out := outBuf[:0]
	for counter := uint64(0); len(out) < n; counter++ {
		seed[sha256.Size] = byte(counter)
		block := sha256.Sum256(seed[:])
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
	return formatUUID(b)
}

// formatUUID writes b in the canonical form, lower-case hex in groups of 8, 4, 4, 4
// and 12 digits separated by hyphens.
func formatUUID(b [16]byte) string {
	var out [36]byte
	hex.Encode(out[0:8], b[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], b[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], b[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], b[8:10])
	out[23] = '-'
	hex.Encode(out[24:36], b[10:16])
	return string(out[:])
}
