# The interface for people: `make run`, `make test`, `make build`, `make lint`,
# `make bench`. CI runs `make test` (see .ci/run).

SHELL := /bin/bash
GO ?= go
MOTO_VERSION := 5.2.1
CFN_LINT_VERSION := 1.51.0
# The AWS Lambda Runtime Interface Emulator, for the end-to-end test of the real
# binaries (it publishes no tagged module versions; this is its commit of 2026-10-30).
RIE_VERSION := v0.0.0-20261030222936-bef5c4ba774d
RIE := bin/aws-lambda-rie
# stripe-mock, Stripe's API mock, for the tests of the Stripe provider and
# PAYMENT_PROVIDER=stripe make run (keep it equal to internal/dev/stripemock.Version).
STRIPE_MOCK_VERSION := v0.203.0
STRIPE_MOCK := bin/stripe-mock
# Redocly's CLI, the OpenAPI document's linter (make lint-openapi, through npx).
REDOCLY_VERSION := 2.77.0
# staticcheck, run by make lint over both modules of go.work (the service and tools/).
STATICCHECK_VERSION := v0.8.2
STATICCHECK := bin/staticcheck
VENV := .venv
PKGS := ./... ./tools/...
# The deadlines module (deadlines/go.mod): built, vetted, linted and tested on its
# own, outside the workspace, as a service that imports it sees it.
DEADLINES := cd deadlines && GOWORK=off
# The example service of another domain on the deadlines module (examples/orders,
# a module of its own), used as an outsider would: outside the workspace too.
EXAMPLE := cd examples/orders && GOWORK=off
# The baseline's count of the same two deadlines kept as one EventBridge Scheduler
# schedule per item, by the rule make example-lines counts with.
EXAMPLE_BASELINE_LINES := 67

FUNCTIONS := command process projector sweep
# Lambda binaries: static, no RPC mode, stripped; provided.al2023 on arm64.
LAMBDA_ENV := CGO_ENABLED=0 GOOS=linux GOARCH=arm64
LAMBDA_FLAGS := -tags lambda.norpc -ldflags "-s -w" -trimpath

.PHONY: example-lines chromium help demo soak run test lint lint-openapi vet fmt staticcheck stripe-mock bench bench-sweep bench-deadline bench-deadlines bench-sweep-chart bench-units bench-history bench-startup bench-throughput build moto rie clean \
	build-CommandFunction build-ProcessFunction build-ProjectorFunction build-SweepFunction

STACK_NEEDS = moto $(if $(filter stripe,$(PAYMENT_PROVIDER)),$(if $(STRIPE_API_URL),,$(STRIPE_MOCK)))

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{n[NR] = $$1; d[NR] = $$2; if (length($$1) > w) w = length($$1)} \
		END {for (i = 1; i <= NR; i++) printf "  make %s  %s\n", sprintf("%-" w "s", n[i]), d[i]}'

demo: $(STACK_NEEDS) ## a narrated walk-through of the service on its own local stack (about 20 seconds on 2 cores, 24 GiB)
	$(GO) run ./cmd/demo

# make run builds the runner and runs it, so that its exit status and its messages
# are its own (Ctrl-C is a clean stop, status 0). A local stack (make run, make demo)
# needs stripe-mock only for PAYMENT_PROVIDER=stripe without STRIPE_API_URL, the one
# case it starts it, and only then is it installed.
LOCAL := bin/local
run: $(STACK_NEEDS) ## run the service locally: moto, the tables and the HTTP API on 127.0.0.1:3000 (or PORT)
	@$(GO) build -o $(LOCAL) ./cmd/local
	@exec $(LOCAL)

# The packages whose code runs goroutines (stream batches, the sweep, the process,
# the command handler, the HTTP API, the local stack and its pollers, the table's
# writers, the rebuild) run under the race detector; the rest without it.
RACE_PKGS := ./internal/app/deadlinekinds/ ./internal/app/parked/ ./internal/app/process/ \
	./internal/app/command/ ./internal/app/repair/ ./internal/ports/httpapi/ ./internal/dev/local/ \
	./internal/dev/streampoll/... ./internal/eventstore/... ./internal/ops/rebuild/
TEST_ENV = RIE=$(CURDIR)/$(RIE) STRIPE_MOCK=$(CURDIR)/$(STRIPE_MOCK)

test: moto rie stripe-mock chromium lint build ## make lint and every test, the DynamoDB ones against a local moto, the console's in headless Chromium, the concurrent packages under the race detector (about 11 minutes with warm Go caches, 23 on a fresh clone with empty ones, measured on a 2-core, 24 GiB machine)
	$(TEST_ENV) $(GO) test -count=1 -race -timeout 15m $(RACE_PKGS)
	$(TEST_ENV) $(GO) test -count=1 -timeout 15m $$($(GO) list $(PKGS) | grep -vxF -f <($(GO) list $(RACE_PKGS)))
	$(DEADLINES) MOTO_SERVER=$${MOTO_SERVER:-$$(command -v moto_server || echo $(CURDIR)/$(VENV)/bin/moto_server)} $(GO) test -count=1 -race -timeout 10m ./...
	$(EXAMPLE) MOTO_SERVER=$${MOTO_SERVER:-$$(command -v moto_server || echo $(CURDIR)/$(VENV)/bin/moto_server)} $(GO) test -count=1 -race -timeout 10m ./...

lint: vet $(STATICCHECK) ## go vet, a gofmt check, staticcheck and cfn-lint on the templates, over the service, tools/, the deadlines module and the example
	$(STATICCHECK) $(PKGS)
	$(DEADLINES) ../$(STATICCHECK) ./...
	$(EXAMPLE) ../../$(STATICCHECK) ./...
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './$(VENV)/*')); \
	if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi
	@if command -v cfn-lint >/dev/null 2>&1; then cfn=cfn-lint; elif [ -x $(VENV)/bin/cfn-lint ]; then cfn=$(VENV)/bin/cfn-lint; \
	else echo "cfn-lint not found: install it with make moto (into .venv) or pip install cfn-lint"; exit 1; fi; \
	for t in template.yaml examples/orders/template.yaml; do $$cfn --include-checks I -- $$t && echo "cfn-lint: $$t ok (informational checks included)" || exit 1; done

# Every rule at error level (recommended-strict), so that a warning fails it too.
# Not part of make test: it needs Node.js and npm's registry. The properties tools
# rely on (no unused component, examples that validate) are also held by the tests
# of internal/testkit/apicontract.
lint-openapi: ## lint api/openapi.yaml with Redocly's CLI at its pinned version, through npx (needs Node.js)
	REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true npx --yes @redocly/cli@$(REDOCLY_VERSION) lint --extends=recommended-strict api/openapi.yaml

vet:
	$(GO) vet $(PKGS)
	$(DEADLINES) $(GO) vet ./...
	$(EXAMPLE) $(GO) vet ./...

# The files listed in examples/orders/deadline-files.txt are the example's Go for
# its deadlines; its test TestTheDeadlineGoIsShorterThanTheBaseline counts the same
# list the same way and fails at the baseline's count or more.
example-lines: ## print the example service's deadline Go by the baseline's counting rule
	@cd examples/orders && total=0; for f in $$(cat deadline-files.txt); do \
		n=$$(grep -cvE '^\s*(//.*)?$$' $$f); total=$$((total + n)); printf '%4d %s\n' $$n $$f; \
	done; printf '%4d in all\n%4d the baseline (one EventBridge Scheduler schedule per item)\n' $$total $(EXAMPLE_BASELINE_LINES)

fmt: ## format the code
	gofmt -w $$(git ls-files '*.go')

bench: moto ## benchmarks of the event store (both implementations) and of the hot paths
	$(GO) test -run '^$$' -bench . -benchmem -count 3 ./internal/eventstore/... ./internal/adapters/dynamo/ ./internal/app/command/ ./internal/app/process/ ./internal/ports/httpapi/

build: ## build every Lambda function into bin/<function>/bootstrap (linux/arm64) and report sizes
	@for f in $(FUNCTIONS); do \
		$(LAMBDA_ENV) $(GO) build $(LAMBDA_FLAGS) -o bin/$$f/bootstrap ./functions/$$f || exit 1; \
		printf '%-10s %s bytes\n' $$f $$(wc -c < bin/$$f/bootstrap); \
	done

# sam build (BuildMethod: makefile) runs build-<LogicalId> with ARTIFACTS_DIR set.
lambda = $(LAMBDA_ENV) $(GO) build $(LAMBDA_FLAGS) -o $(ARTIFACTS_DIR)/bootstrap ./functions/$(1)
build-CommandFunction:
	$(call lambda,command)
build-ProcessFunction:
	$(call lambda,process)
build-ProjectorFunction:
	$(call lambda,projector)
build-SweepFunction:
	$(call lambda,sweep)

soak: moto ## long load runs on a local stack, calm and with 20% of DynamoDB requests faulted (minutes)
	$(GO) run ./tools/cmd/loadgen --rentals 400 --renters 8 --bikes 10
	$(GO) run ./tools/cmd/loadgen --rentals 400 --renters 8 --bikes 10 --faults 0.2

bench-sweep: moto ## items one sweep reads vs a scan (SWEEP_BENCH_SIZES=1000,10000,100000 for more)
	$(GO) test -run '^$$' -bench BenchmarkSweepItemsRead -benchtime 3x -timeout 60m ./tools/sweepscale/

# The chart needs only the items read, which do not vary between runs: one sweep per
# size is enough. The benchmark's output is kept beside the chart as its data.
bench-sweep-chart: moto ## bench-sweep at 1,000, 10,000 and 100,000 pending rows, charted into docs/sweep-scaling.png
	set -o pipefail; SWEEP_BENCH_SIZES=1000,10000,100000 $(GO) test -run '^$$' -bench BenchmarkSweepItemsRead -benchtime 1x -timeout 60m ./tools/sweepscale/ | tee docs/sweep-scaling.txt.partial
	mv docs/sweep-scaling.txt.partial docs/sweep-scaling.txt
	$(GO) run ./tools/cmd/sweepchart -in docs/sweep-scaling.txt -out docs/sweep-scaling.png

# The deadlines module's own benchmarks (deadlines/dynamo/bench_test.go): what a
# deadline costs on moto, moto's pace for 2,000 writes, and the sizing at 100,000
# deadlines on the benchmarks' in-process table. Their output is kept as
# deadlines/docs/bench-deadlines.txt, the data of the report and of the chart.
DEADLINES_BENCH_COSTS := -bench '^BenchmarkWhatADeadlineCosts$$' -benchtime 20x
DEADLINES_BENCH_MOTO := -bench '^BenchmarkApplyOnMoto$$' -benchtime 2000x
DEADLINES_BENCH_SIZING := -bench '^(BenchmarkSizing|BenchmarkSweepReads)$$' -benchtime 1x
DEADLINES_BENCH_ROWS := 1000,10000,100000
deadlines_bench = ($(DEADLINES) MOTO_SERVER=$${MOTO_SERVER:-$$(command -v moto_server || echo $(CURDIR)/$(VENV)/bin/moto_server)} DEADLINES_BENCH_ROWS=$(DEADLINES_BENCH_ROWS) $(GO) test -run '^$$' -timeout 60m $(1) ./dynamo/)
bench-deadlines: moto ## what a deadline costs and the module's sizing at 100,000 deadlines, as markdown and a chart (minutes)
	set -o pipefail; { $(call deadlines_bench,$(DEADLINES_BENCH_COSTS)) && $(call deadlines_bench,$(DEADLINES_BENCH_MOTO)) && \
		$(call deadlines_bench,$(DEADLINES_BENCH_SIZING)); } | tee deadlines/docs/bench-deadlines.txt.partial
	mv deadlines/docs/bench-deadlines.txt.partial deadlines/docs/bench-deadlines.txt
	$(GO) run ./tools/cmd/deadlinesreport -in deadlines/docs/bench-deadlines.txt -md deadlines/docs/costs.md -chart deadlines/docs/sweep-reads.png \
		-command "make bench-deadlines, which runs, in deadlines/, GOWORK=off go test -run '^$$' ./dynamo/ with $(DEADLINES_BENCH_COSTS); with $(DEADLINES_BENCH_MOTO); and with $(DEADLINES_BENCH_SIZING) and DEADLINES_BENCH_ROWS=$(DEADLINES_BENCH_ROWS); then go run ./tools/cmd/deadlinesreport -in deadlines/docs/bench-deadlines.txt -md deadlines/docs/costs.md -chart deadlines/docs/sweep-reads.png"

# What an approved rental's bike commands and view read at 0 to 10,000 earlier
# rentals of the same bike, measured on moto (a few minutes: seeding 30,000 events),
# charted into docs/bike-history.svg. The test output is kept beside the chart.
BIKE_HISTORY_SIZES ?= 0,10,100,1000,10000
bench-history: moto ## reads per bike command and rental view by the bike's age, charted into docs/bike-history.svg (minutes)
	set -o pipefail; BIKE_HISTORY_SIZES=$(BIKE_HISTORY_SIZES) $(GO) test -count=1 -v -timeout 60m -run '^TestBikeCommandsReadTheSameAtAnyAge$$' ./internal/app/bikestream/ | grep -v '^[0-9]\{4\}/' | tee docs/bike-history.txt.partial
	mv docs/bike-history.txt.partial docs/bike-history.txt
	$(GO) run ./tools/cmd/historychart -in docs/bike-history.txt -out docs/bike-history.svg

# Request units per rental path, floor and cost per million rentals, as markdown on
# stdout (progress on stderr); BENCH_UNITS_FLAGS=-modes=append -history=0 for less.
bench-units: moto ## DynamoDB request units per rental and cost per million rentals, as markdown (about a minute)
	@$(GO) run ./tools/cmd/unitreport $(BENCH_UNITS_FLAGS)

# Deadline lateness on a local stack, in sweep and in precise mode (about a minute
# each), then one sweep over 1,000 payments that fall due together, CPU-profiled, with
# the emulator's own ceiling for the same calls (minutes: on moto every Query sorts the whole table). Flags:
# DEADLINE_LATENESS_FLAGS (e.g. --rentals 50), DEADLINE_SWEEP_FLAGS (e.g.
# --concurrency 1,4,8,16,32); go run ./tools/cmd/deadlinebench <lateness|sweep> -h lists them.
DEADLINE_SWEEP_FLAGS ?= --concurrency 1,8,32
bench-deadline: moto ## deadline lateness in both modes, and one sweep over 1,000 due payments with a CPU profile (minutes)
	$(GO) run ./tools/cmd/deadlinebench lateness --mode sweep $(DEADLINE_LATENESS_FLAGS)
	$(GO) run ./tools/cmd/deadlinebench lateness --mode precise $(DEADLINE_LATENESS_FLAGS)
	@mkdir -p bin
	$(GO) run ./tools/cmd/deadlinebench sweep --cpuprofile bin/deadline-sweep.pprof $(DEADLINE_SWEEP_FLAGS)
	$(GO) tool pprof -top -nodecount 25 bin/deadline-sweep.pprof

# Throughput of one stream shard: rental requests a second through the process and
# the projector, built as the functions build them, on the in-memory store with a
# simulated latency per DynamoDB call and a provider of 0, 50 and 300 ms, one record
# at a time (STREAM_CONCURRENCY 1, as before) and concurrently, and the
# ParallelizationFactor 100 rentals a second need, as markdown (about two minutes; no
# emulator). THROUGHPUT_FLAGS: e.g. -rentals 400 -concurrency 1,16,32 -parallelization 1,2,4.
THROUGHPUT_FLAGS ?= -concurrency 1,16,32 -parallelization 1,2,4
bench-throughput: ## rental requests a second one stream shard sustains, before and after concurrency, as markdown (minutes)
	$(GO) run ./tools/cmd/throughputbench $(THROUGHPUT_FLAGS)

# Start-up: each function's stripped arm64 and amd64 size and its cold start under the
# Runtime Interface Emulator, next to a minimal aws-lambda-go function built the same
# way, as a markdown table (about a minute). STARTUP_RUNS cold starts of each (20).
STARTUP_RUNS ?= 20
bench-startup: moto rie ## function sizes and cold starts under the RIE vs a hello-world, as markdown
	$(GO) run ./tools/cmd/startupbench -n $(STARTUP_RUNS) -rie $(CURDIR)/$(RIE)

# bin/staticcheck is rebuilt when the pinned version changes: the stamp names it.
staticcheck: $(STATICCHECK) ## install the pinned staticcheck into bin/ (make lint runs it)
$(STATICCHECK): bin/.staticcheck-$(STATICCHECK_VERSION)
bin/.staticcheck-$(STATICCHECK_VERSION):
	GOBIN=$(CURDIR)/bin $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	rm -f bin/.staticcheck-*
	touch $@

stripe-mock: $(STRIPE_MOCK) ## install the pinned stripe-mock into bin/ (the Stripe provider's tests, PAYMENT_PROVIDER=stripe)
$(STRIPE_MOCK):
	GOBIN=$(CURDIR)/bin $(GO) install github.com/stripe/stripe-mock@$(STRIPE_MOCK_VERSION)

rie: $(RIE) ## install the Lambda Runtime Interface Emulator into bin/
$(RIE):
	GOBIN=$(CURDIR)/bin $(GO) install github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@$(RIE_VERSION)

# chromium: the headless browser the operator console's tests drive
# (internal/testkit/console), Debian's package, installed only when none is on PATH
# (or at CHROMIUM). Installing needs root (or sudo) and apt; elsewhere install a
# Chromium yourself. Without one the console's tests skip, and fail under CI=true.
chromium: ## check for chromium, or install Debian's package with apt-get
	@if [ -n "$$CHROMIUM" ] && [ -x "$$CHROMIUM" ]; then exit 0; fi; \
	if command -v chromium >/dev/null 2>&1; then exit 0; fi; \
	if ! command -v apt-get >/dev/null 2>&1; then echo "chromium not found and no apt-get: install Chromium and put it on PATH (or set CHROMIUM)"; exit 1; fi; \
	sudo=; if [ "$$(id -u)" != 0 ]; then sudo=sudo; fi; \
	echo "chromium not found: installing Debian's chromium package"; \
	$$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq --no-install-recommends chromium >/dev/null && chromium --version

# moto: make sure a moto_server is available: on PATH (as on the project's machines),
# or installed here into $(VENV) from PyPI at the pinned version.
moto: ## check for moto_server, or install the pinned moto into .venv
	@if [ -n "$$MOTO_SERVER" ] && [ -x "$$MOTO_SERVER" ]; then exit 0; fi; \
	if command -v moto_server >/dev/null 2>&1 || [ -x $(VENV)/bin/moto_server ]; then exit 0; fi; \
	echo "moto_server not found: installing moto[server]==$(MOTO_VERSION) and cfn-lint into $(VENV)"; \
	python3 -m venv $(VENV) && $(VENV)/bin/pip install --quiet 'moto[server]==$(MOTO_VERSION)' 'cfn-lint==$(CFN_LINT_VERSION)'

clean: ## remove build output and the local virtual environment
	rm -rf bin .aws-sam $(VENV)
