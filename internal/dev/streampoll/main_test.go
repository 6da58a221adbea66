package streampoll_test

import (
	"testing"

	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
)

func TestMain(m *testing.M) { emulatortest.Main(m) }
