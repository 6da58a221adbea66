package deadline_test

import (
	"testing"

	"github.com/bikerental/bikerental/internal/app/deadline"
	"github.com/bikerental/bikerental/internal/app/deadline/indextest"
)

func TestMemoryKeepsTheIndexContract(t *testing.T) {
	indextest.Run(t, func(*testing.T) indextest.Subject { return deadline.NewMemory(4) })
}
