// Package emulatortest gives tests a moto server, started once per test binary on
// first use and stopped when the tests end, and isolated tables on it.
//
// Use it from TestMain:
//
//	func TestMain(m *testing.M) { emulatortest.Main(m) }
//
// When moto_server is absent, tests that need it fail under CI=true and are skipped
// with the reason otherwise.
package emulatortest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/bikerental/bikerental/internal/adapters/schema"
	"github.com/bikerental/bikerental/internal/dev/emulator"
)

var (
	once     sync.Once
	server   *emulator.Server
	startErr error
	tables   atomic.Int64
)

// Main runs the tests and stops the server if one was started. Call it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	if server != nil {
		server.Stop()
	}
	os.Exit(code)
}

// Server returns the shared moto server, starting it on first use. If it cannot be
// started the test fails under CI=true, and is skipped with the reason otherwise.
func Server(tb testing.TB) *emulator.Server {
	tb.Helper()
	once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		server, startErr = emulator.Start(ctx)
	})
	if startErr != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("the local AWS emulator is required under CI=true: %v", startErr)
		}
		tb.Skipf("SKIPPED, local AWS emulator unavailable: %v", startErr)
	}
	return server
}

// Config returns an AWS configuration pointed at the shared server.
func Config(tb testing.TB) aws.Config {
	tb.Helper()
	cfg, err := Server(tb).Config(context.Background())
	if err != nil {
		tb.Fatalf("aws config: %v", err)
	}
	return cfg
}

// DynamoDB returns a DynamoDB client on the shared server.
func DynamoDB(tb testing.TB) *dynamodb.Client {
	tb.Helper()
	return dynamodb.NewFromConfig(Config(tb))
}

var unsafe = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// TableName returns a table name no other test in this process uses, derived from the
// test's name, so that tests can run in parallel on one server.
func TableName(tb testing.TB, kind string) string {
	name := unsafe.ReplaceAllString(tb.Name(), "_")
	if len(name) > 150 {
		name = name[:150]
	}
	return fmt.Sprintf("%s-%s-%d", kind, name, tables.Add(1))
}

// CreateTable creates a fresh table from def under a unique name and returns that name.
// The table is deleted when the test ends.
func CreateTable(tb testing.TB, client *dynamodb.Client, def func(name string) *dynamodb.CreateTableInput, kind string) string {
	tb.Helper()
	name := TableName(tb, kind)
	if err := schema.Create(context.Background(), client, def(name)); err != nil {
		tb.Fatalf("create table: %v", err)
	}
	tb.Cleanup(func() {
		client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	})
	return name
}

// EventsTable creates a fresh Events table and returns a client and its name.
func EventsTable(tb testing.TB) (*dynamodb.Client, string) {
	tb.Helper()
	client := DynamoDB(tb)
	return client, CreateTable(tb, client, schema.Events, "events")
}

// RIE returns the absolute path of the AWS Lambda Runtime Interface Emulator: $RIE
// (what make test sets), bin/aws-lambda-rie under repoRoot, or aws-lambda-rie on
// PATH. Without one the test is skipped, or fails under CI=true.
func RIE(tb testing.TB, repoRoot string) string {
	tb.Helper()
	candidates := []string{os.Getenv("RIE"), filepath.Join(repoRoot, "bin", "aws-lambda-rie")}
	if p, err := exec.LookPath("aws-lambda-rie"); err == nil {
		candidates = append(candidates, p)
	}
	for _, c := range candidates {
		if c == "" {
			continue
		}
		if abs, err := filepath.Abs(c); err == nil {
			if _, err := os.Stat(abs); err == nil {
				return abs
			}
		}
	}
	if os.Getenv("CI") == "true" {
		tb.Fatal("aws-lambda-rie is required under CI=true: run make rie")
	}
	tb.Skip("SKIPPED, aws-lambda-rie not installed: run make rie")
	return ""
}
