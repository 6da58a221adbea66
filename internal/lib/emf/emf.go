// Package emf writes CloudWatch metrics in Embedded Metric Format: one JSON document
// per line on a function's standard output, which Lambda's log agent turns into
// metrics without any API call. It is the one writer of the service's metrics (the
// sweep's and the payments').
package emf

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// Dimension is one dimension of a document's metrics: its name and value.
type Dimension struct {
	Name, Value string
}

// Metric is one value of a document.
type Metric struct {
	Name  string
	Unit  string // a CloudWatch unit: Count, Seconds, ...
	Value float64
}

// Document is one EMF document: metrics in one namespace, with one set of
// dimensions, at one time.
type Document struct {
	Namespace  string
	Timestamp  time.Time
	Dimensions []Dimension
	Metrics    []Metric
}

// ErrInvalid reports a document that CloudWatch would not turn into metrics, or
// would file under an empty dimension.
var ErrInvalid = errors.New("emf: invalid document")

// Marshal renders d as one EMF document: the _aws member with the timestamp and the
// metric directive, and each dimension and metric value as a top-level member. A
// document without a namespace or metrics, an empty name or dimension value, or two
// members of one name, is an error wrapping ErrInvalid.
func Marshal(d Document) ([]byte, error) {
	if d.Namespace == "" || len(d.Metrics) == 0 {
		return nil, fmt.Errorf("%w: a namespace and at least one metric are needed", ErrInvalid)
	}
	doc := map[string]any{}
	set := func(name string, v any) error {
		if _, taken := doc[name]; taken || name == "" || name == "_aws" {
			return fmt.Errorf("%w: member %q is empty, reserved or given twice", ErrInvalid, name)
		}
		doc[name] = v
		return nil
	}
	dims := []string{}
	for _, dim := range d.Dimensions {
		if dim.Value == "" {
			return nil, fmt.Errorf("%w: dimension %q has no value", ErrInvalid, dim.Name)
		}
		if err := set(dim.Name, dim.Value); err != nil {
			return nil, err
		}
		dims = append(dims, dim.Name)
	}
	var metrics []map[string]string
	for _, m := range d.Metrics {
		if err := set(m.Name, m.Value); err != nil {
			return nil, err
		}
		metrics = append(metrics, map[string]string{"Name": m.Name, "Unit": m.Unit})
	}
	doc["_aws"] = map[string]any{
		"Timestamp": d.Timestamp.UnixMilli(),
		"CloudWatchMetrics": []map[string]any{{
			"Namespace":  d.Namespace,
			"Dimensions": [][]string{dims},
			"Metrics":    metrics,
		}},
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("emf: %w", err)
	}
	return b, nil
}

// Writer writes documents to an io.Writer, one a line. It is safe for concurrent
// use: each document is one Write. A nil *Writer writes nothing.
type Writer struct {
	mu sync.Mutex
	w  io.Writer
}

// NewWriter returns a Writer to w (a function's standard output).
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write writes d as one line. It returns Marshal's errors, and the io.Writer's.
func (w *Writer) Write(d Document) error {
	if w == nil {
		return nil
	}
	b, err := Marshal(d)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	_, err = w.w.Write(append(b, '\n'))
	return err
}
