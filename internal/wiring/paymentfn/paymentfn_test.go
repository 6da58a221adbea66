package paymentfn_test

import (
	"context"
	"strings"
	"testing"

	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/wiring/paymentfn"
)

// TestProviderTimeoutSetting checks that PAYMENT_PROVIDER_TIMEOUT is read at start,
// a bad value refused naming it, and the provider bounded by it.
func TestProviderTimeoutSetting(t *testing.T) {
	for _, bad := range []string{"0s", "-1s", "5", "soon", "8001ms", "1h"} {
		_, err := paymentfn.Provider(context.Background(), nil, func(k string) string {
			if k == paymentfn.EnvProviderTimeout {
				return bad
			}
			return ""
		})
		if err == nil || !strings.Contains(err.Error(), paymentfn.EnvProviderTimeout) {
			t.Errorf("%s=%q: err = %v, want a refusal naming it", paymentfn.EnvProviderTimeout, bad, err)
		}
	}
	pay, err := paymentfn.Provider(context.Background(), nil, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if _, bare := pay.Provider.(generic.Provider); bare {
		t.Error("the provider's calls are not bounded")
	}
}
