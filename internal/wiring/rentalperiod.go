package wiring

import (
	"time"

	"github.com/bikerental/bikerental/internal/domain/rental"
)

// EnvRentalPeriod is how long an approved rental lasts: its bike is due back at the
// approval's time plus it (rental.DefaultPeriod, 2h, when unset). The sweep's
// commands flag a return overdue with it, and the projector opens the return
// deadlines with it.
const EnvRentalPeriod = "RENTAL_PERIOD"

// RentalPeriod reads RENTAL_PERIOD, a positive duration such as 2h or 90m, the one
// place it is read; anything else is refused with an error wrapping ErrBadSetting.
func RentalPeriod(getenv Getenv) (time.Duration, error) {
	return durationSetting(getenv, EnvRentalPeriod, rental.DefaultPeriod)
}
