package emf_test

import (
	"bytes"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/lib/emf"
	"github.com/bikerental/bikerental/internal/lib/emf/emftest"
)

func TestADocumentIsOneValidEMFLine(t *testing.T) {
	var out bytes.Buffer
	w := emf.NewWriter(&out)
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	d := emf.Document{Namespace: "BikeRental/Test", Timestamp: at, Dimensions: []emf.Dimension{{"Service", "bikerental-test"}},
		Metrics: []emf.Metric{{"Found", "Count", 3}, {"OldestOverdue", "Seconds", 1.5}}}
	if err := w.Write(d); err != nil {
		t.Fatal(err)
	}
	docs := emftest.Parse(t, out.Bytes())
	if len(docs) != 1 {
		t.Fatalf("%d documents, want 1", len(docs))
	}
	got := docs[0]
	if got.Namespace != "BikeRental/Test" || !got.Timestamp.Equal(at) || got.Dimensions["Service"] != "bikerental-test" ||
		got.Values["Found"] != 3 || got.Values["OldestOverdue"] != 1.5 || got.Units["OldestOverdue"] != "Seconds" {
		t.Errorf("parsed %+v", got)
	}
}

func TestAnInvalidDocumentIsRefused(t *testing.T) {
	ok := emf.Document{Namespace: "N", Dimensions: []emf.Dimension{{"Service", "s"}}, Metrics: []emf.Metric{{"M", "Count", 1}}}
	for name, change := range map[string]func(*emf.Document){
		"empty dimension":       func(d *emf.Document) { d.Dimensions[0].Value = "" },
		"no namespace":          func(d *emf.Document) { d.Namespace = "" },
		"no metrics":            func(d *emf.Document) { d.Metrics = nil },
		"metric named as a dim": func(d *emf.Document) { d.Metrics[0].Name = "Service" },
		"metric named _aws":     func(d *emf.Document) { d.Metrics[0].Name = "_aws" },
		"metric without a name": func(d *emf.Document) { d.Metrics[0].Name = "" },
	} {
		d := ok
		d.Dimensions = append([]emf.Dimension(nil), ok.Dimensions...)
		d.Metrics = append([]emf.Metric(nil), ok.Metrics...)
		change(&d)
		var out bytes.Buffer
		if err := emf.NewWriter(&out).Write(d); !errors.Is(err, emf.ErrInvalid) || out.Len() != 0 {
			t.Errorf("%s: err %v, wrote %q; want ErrInvalid and nothing written", name, err, out.String())
		}
	}
	if _, err := emf.Marshal(ok); err != nil {
		t.Errorf("the valid document: %v", err)
	}
}

// TestConcurrentDocumentsStayWholeLines: documents written at once never
// interleave.
func TestConcurrentDocumentsStayWholeLines(t *testing.T) {
	var out bytes.Buffer
	w := emf.NewWriter(&out)
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			if err := w.Write(emf.Document{Namespace: "N", Dimensions: []emf.Dimension{{"Service", "s"}}, Metrics: []emf.Metric{{"M", "Count", 1}}}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := len(emftest.Parse(t, out.Bytes())); n != 50 {
		t.Errorf("%d documents, want 50", n)
	}
}
