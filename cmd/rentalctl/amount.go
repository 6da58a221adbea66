package main

import (
	"fmt"

	"github.com/bikerental/bikerental/internal/domain/payment"
)

// formatAmount writes an amount in minor units of a currency as people read it,
// with the decimals payment providers take it in (payment.Decimals: "15.00 EUR",
// "1500 JPY", "1.500 KWD"), as the console does (its rules carry the same table).
func formatAmount(minor int64, code string) string {
	scale := payment.Decimals(code)
	if scale == 0 {
		return fmt.Sprintf("%d %s", minor, code)
	}
	sign, abs := "", minor
	if minor < 0 {
		sign, abs = "-", -minor
	}
	div := int64(1)
	for range scale {
		div *= 10
	}
	return fmt.Sprintf("%s%d.%0*d %s", sign, abs/div, scale, abs%div, code)
}
