package deadline_test

import (
	"testing"

	"github.com/bikerental/bikerental/examples/orders/internal/moto"
)

func TestMain(m *testing.M) { moto.Main(m) }
