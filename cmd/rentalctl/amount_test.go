package main

import "testing"

// An amount is written with its currency's own decimals, not always two: a
// refund of 1500 JPY is 1500 yen, not 15.00.
func TestAmountsAreWrittenWithTheirCurrencysDecimals(t *testing.T) {
	for _, c := range []struct {
		minor int64
		code  string
		want  string
	}{
		{1500, "EUR", "15.00 EUR"},
		{5, "USD", "0.05 USD"},
		{1500, "JPY", "1500 JPY"},
		{1500, "KWD", "1.500 KWD"},
		{99999999, "EUR", "999999.99 EUR"},
		{-250, "EUR", "-2.50 EUR"},
		{1500, "ZZZ", "1500 ZZZ (minor units)"},
		{1500, "", "1500  (minor units)"},
	} {
		if got := formatAmount(c.minor, c.code); got != c.want {
			t.Errorf("formatAmount(%d, %q) = %q, want %q", c.minor, c.code, got, c.want)
		}
	}
}
