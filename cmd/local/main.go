// Local runs the service on this machine with no AWS account and no Docker: it starts
// moto's server (unless AWS_ENDPOINT_URL points elsewhere), creates the tables, serves
// the HTTP API on 127.0.0.1:$PORT through the same handler the command Lambda runs,
// and feeds the Events table's stream to the rental-payment process as Lambda's event
// source mapping would. Ctrl-C stops everything it started.
//
// Environment: PORT (3000), EVENTS_TABLE (bikerental-events), PAYMENT_WEBHOOK_SECRET
// (a documented local default), RECORDING_MODE, RENTAL_PRICE_CENTS, RENTAL_CURRENCY,
// LOG_FORMAT (text, or json), AWS_ENDPOINT_URL.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

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
	service, err := wiring.Build(ctx, cfg, getenv, logger)
	if err != nil {
		return err
	}
	desc, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		return err
	}
	process := &stream.Poller{
		Client:    dynamodbstreams.NewFromConfig(cfg),
		StreamARN: aws.ToString(desc.Table.LatestStreamArn),
		Logger:    logger,
		Handler: func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			return stream.HandleBatch(ctx, ev, service.Process.Handle, logger.With("function", "process")), nil
		},
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, 2)
	go func() { errs <- process.Run(ctx, 0) }()
	addr := "127.0.0.1:" + getenv("PORT")
	go func() { errs <- local.Serve(ctx, addr, local.Gateway{Handler: service.API.Handle}) }()
	fmt.Printf("API: http://%s   (Ctrl-C stops everything)\n", addr)
	err = <-errs
	cancel()
	if err2 := <-errs; err == nil {
		err = err2
	}
	return err
}
