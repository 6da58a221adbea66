// Local runs the service on this machine with no AWS account and no Docker: it starts
// moto's server (unless AWS_ENDPOINT_URL points elsewhere), creates the tables, serves
// the HTTP API on 127.0.0.1:$PORT through the same handler the command Lambda runs,
// feeds the Events table's stream to the rental-payment process and to the projector
// as Lambda's event source mappings would (one poller each, with its own position),
// and runs the sweep every SWEEP_INTERVAL with the scheduled time as its input, as
// EventBridge Scheduler would. Ctrl-C stops everything it started.
//
// Environment: PORT (3000), EVENTS_TABLE (bikerental-events), PENDING_TABLE
// (bikerental-pending), PAYMENT_WEBHOOK_SECRET (a documented local default),
// PAYMENT_TIMEOUT (15m), SWEEP_INTERVAL (5s), RECORDING_MODE, RENTAL_PRICE_CENTS,
// RENTAL_CURRENCY, PENDING_SHARDS, LOG_FORMAT (text, or json), AWS_ENDPOINT_URL.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/bikerental/bikerental/internal/emulator"
	"github.com/bikerental/bikerental/internal/local"
	"github.com/bikerental/bikerental/internal/schema"
	"github.com/bikerental/bikerental/internal/stream"
	"github.com/bikerental/bikerental/internal/wiring"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "local:", err)
		os.Exit(1)
	}
}

var defaults = map[string]string{
	"PORT":                  "3000",
	wiring.EnvEventsTable:   "bikerental-events",
	wiring.EnvPendingTable:  "bikerental-pending",
	"SWEEP_INTERVAL":        "5s",
	wiring.EnvWebhookSecret: local.DefaultWebhookSecret,
	"LOG_FORMAT":            "text",
}

func getenv(name string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return defaults[name]
}

func run(ctx context.Context) error {
	var logger *slog.Logger
	if getenv("LOG_FORMAT") == "json" {
		logger = slog.New(slog.NewJSONHandler(os.Stdout, nil))
	} else {
		logger = slog.New(slog.NewTextHandler(os.Stdout, nil))
	}

	var cfg aws.Config
	var err error
	if endpoint := os.Getenv("AWS_ENDPOINT_URL"); endpoint != "" {
		fmt.Printf("AWS endpoint: %s (from AWS_ENDPOINT_URL)\n", endpoint)
		cfg, err = wiring.AWSConfig(ctx)
	} else {
		fmt.Println("starting the local AWS emulator (moto_server)...")
		var srv *emulator.Server
		if srv, err = emulator.Start(ctx); err != nil {
			return err
		}
		defer srv.Stop()
		fmt.Printf("AWS emulator: %s\n", srv.Endpoint)
		cfg, err = srv.Config(ctx)
	}
	if err != nil {
		return err
	}
	db := dynamodb.NewFromConfig(cfg)
	table := getenv(wiring.EnvEventsTable)
	if err := schema.Create(ctx, db, schema.Events(table)); err != nil {
		return err
	}
	if err := schema.CreatePendingPayments(ctx, db, getenv(wiring.EnvPendingTable)); err != nil {
		return err
	}
	service, err := wiring.Build(ctx, cfg, getenv, logger)
	if err != nil {
		return err
	}
	projector, err := wiring.Projection(cfg, getenv) // the writer, with SETTLED_MARKER_TTL
	if err != nil {
		return err
	}
	desc, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		return err
	}
	interval, err := time.ParseDuration(getenv("SWEEP_INTERVAL"))
	if err != nil || interval <= 0 {
		return fmt.Errorf("SWEEP_INTERVAL=%q: want a positive duration such as 5s", getenv("SWEEP_INTERVAL"))
	}
	sweeper, err := wiring.Sweeper(service.Projection, service.Process, getenv, logger.With("function", "sweep"), nil)
	if err != nil {
		return err
	}
	streams := dynamodbstreams.NewFromConfig(cfg)
	consumer := func(name string, h stream.Handler) *stream.Poller {
		log := logger.With("function", name)
		return &stream.Poller{
			Client: streams, StreamARN: aws.ToString(desc.Table.LatestStreamArn), Logger: log,
			Handler: func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
				return stream.HandleBatch(ctx, ev, h, log), nil
			},
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	addr := "127.0.0.1:" + getenv("PORT")
	tasks := []func() error{
		func() error { return consumer("process", service.Process.Handle).Run(ctx, 0) },
		func() error { return consumer("projector", projector.Apply).Run(ctx, 0) },
		func() error { return local.Schedule(ctx, interval, sweeper.Sweep) },
		func() error { return local.Serve(ctx, addr, local.Gateway{Handler: service.API.Handle}) },
	}
	errs := make(chan error, len(tasks))
	for _, task := range tasks {
		go func() { errs <- task() }()
	}
	fmt.Printf("API: http://%s   sweep every %s, payment timeout %s   (Ctrl-C stops everything)\n",
		addr, interval, sweeper.Timeout)
	err = <-errs
	cancel()
	for range len(tasks) - 1 {
		if err2 := <-errs; err == nil {
			err = err2
		}
	}
	return err
}
