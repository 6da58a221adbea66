package paymentfn_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/eventstore"
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
	for setting, want := range map[string]time.Duration{"": command.DefaultProviderTimeout, "3s": 3 * time.Second} {
		pay, err := paymentfn.Provider(context.Background(), nil, func(k string) string {
			if k == paymentfn.EnvProviderTimeout {
				return setting
			}
			return ""
		})
		if err != nil {
			t.Fatal(err)
		}
		if pay.Timeout != want {
			t.Errorf("%s=%q: calls bounded by %v, want %v", paymentfn.EnvProviderTimeout, setting, pay.Timeout, want)
		}
		if _, bare := command.New(eventstore.NewMemory(), pay.Option()).Provider().(generic.Provider); bare {
			t.Errorf("%s=%q: the commands' provider calls are not bounded", paymentfn.EnvProviderTimeout, setting)
		}
	}
}
