package deadline_test

import (
	"testing"

	"github.com/bikerental/bikerental/internal/app/deadline/indextest"
	"github.com/bikerental/bikerental/internal/app/deadline/memindex"
)

func TestMemoryKeepsTheIndexContract(t *testing.T) {
	indextest.Run(t, func(*testing.T) indextest.Subject { return memindex.New(4) })
}
