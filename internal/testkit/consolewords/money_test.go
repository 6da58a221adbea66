package consolewords_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/bikerental/bikerental/internal/domain/payment"
)

// TestTheConsoleWritesAmountsWithTheProvidersDecimals: the console's money
// (byhand.js, its own JavaScript in Chromium, with the decimals its rules carry
// from payment.NonDecimal) writes each amount with payment.Decimals of its currency,
// as rentalctl does: 1500 JPY is 1,500 yen, 1500 KWD 1.500 dinars, and 10000 ISK
// or IDR 100.00, as Stripe takes them, whatever the browser's own table says.
func TestTheConsoleWritesAmountsWithTheProvidersDecimals(t *testing.T) {
	src := consoleSource(t, "byhand.js")
	src = regexp.MustCompile(`(?m)^import .*;$`).ReplaceAllString(src, "")
	src = regexp.MustCompile(`(?m)^export `).ReplaceAllString(src, "")
	decimals, _ := json.Marshal(payment.NonDecimal())
	srcJSON, _ := json.Marshal("const CURRENCY_DECIMALS = " + string(decimals) + ";\n" + src + "\nreturn money;")
	cases := []struct {
		Amount   int64
		Currency string
	}{{1500, "EUR"}, {5, "USD"}, {1500, "JPY"}, {1500, "KWD"}, {10000, "ISK"}, {10000, "IDR"}, {123456789, "KRW"}, {99999999, "EUR"}}
	casesJSON, _ := json.Marshal(cases)
	ctx, cancel := context.WithTimeout(browser(t), 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("open a page in Chromium: %v", err)
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`(() => {
		const money = new Function(`+string(srcJSON)+`)();
		return `+string(casesJSON)+`.map((c) => money(c.Amount, c.Currency));
	})()`))
	if err != nil {
		t.Fatalf("run the console's money in Chromium: %v", err)
	}
	for i, c := range cases {
		d := payment.Decimals(c.Currency)
		div := int64(1)
		for range d {
			div *= 10
		}
		want := fmt.Sprintf("%s %d", c.Currency, c.Amount/div)
		if d > 0 {
			want += fmt.Sprintf(".%0*d", d, c.Amount%div)
		}
		if i >= len(got) || strings.ReplaceAll(got[i], ",", "") != want {
			t.Errorf("money(%d, %s) = %q, want %q (grouping aside)", c.Amount, c.Currency, got[i], want)
		}
	}
}
