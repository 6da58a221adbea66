package main

import (
	"fmt"

	"golang.org/x/text/currency"
)

// formatAmount writes an amount in minor units of an ISO 4217 currency as people read
// it, with the currency's own decimals ("15.00 EUR", "1500 JPY", "1.500 KWD"), as
// the console does (console/byhand.js, money, from the browser's CLDR data); for a
// currency code no table knows, the minor units and the code, said to be such.
func formatAmount(minor int64, code string) string {
	unit, err := currency.ParseISO(code)
	if err != nil {
		return fmt.Sprintf("%d %s (minor units)", minor, code)
	}
	scale, _ := currency.Standard.Rounding(unit)
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
