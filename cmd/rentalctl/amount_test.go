package main

import "testing"

// An amount is written with the decimals providers take its currency in, not
// always two: a refund of 1500 JPY is 1500 yen, not 15.00; and ISK and IDR, which
// ISO 4217 gives other decimals, in hundredths, as Stripe takes them.
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
		{10000, "ISK", "100.00 ISK"},
		{10000, "IDR", "100.00 IDR"},
		{1500, "ZZZ", "15.00 ZZZ"},
	} {
		if got := formatAmount(c.minor, c.code); got != c.want {
			t.Errorf("formatAmount(%d, %q) = %q, want %q", c.minor, c.code, got, c.want)
		}
	}
}
