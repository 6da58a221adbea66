package deadline_test

import (
	"testing"

	"github.com/bikerental/bikerental/internal/app/deadline"
	"github.com/bikerental/bikerental/internal/app/deadline/indextest"
	"github.com/bikerental/bikerental/internal/app/deadline/memindex"
)

func TestMemoryKeepsTheIndexContract(t *testing.T) {
	indextest.Run(t, func(*testing.T) indextest.Subject { return memindex.New(4) })
}

func TestMemoryKeepsTheContractOfAnyKind(t *testing.T) {
	indextest.RunKinds(t, func(_ *testing.T, kinds deadline.Kinds) indextest.KindSubject { return memindex.NewWith(4, kinds) })
}
