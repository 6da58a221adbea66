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
VENV := .venv
PKGS := ./...

FUNCTIONS := command process projector sweep
# Lambda binaries: static, no RPC mode, stripped; provided.al2023 on arm64.
LAMBDA_ENV := CGO_ENABLED=0 GOOS=linux GOARCH=arm64
LAMBDA_FLAGS := -tags lambda.norpc -ldflags "-s -w" -trimpath

.PHONY: help demo soak run test lint vet fmt bench bench-sweep build moto rie clean \
	build-CommandFunction build-ProcessFunction build-ProjectorFunction build-SweepFunction

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-8s %s\n", $$1, $$2}'

demo: moto ## a narrated walk-through of the service on its own local stack (about a minute)
	$(GO) run ./cmd/demo

run: moto ## run the service locally: moto, the tables and the HTTP API on 127.0.0.1:3000 (or PORT)
	$(GO) run ./cmd/local

test: moto rie lint build ## go vet, gofmt check and every test, the DynamoDB ones against a local moto
	RIE=$(CURDIR)/$(RIE) $(GO) test -count=1 -timeout 15m $(PKGS)

lint: vet ## go vet, a gofmt check and cfn-lint on template.yaml
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './$(VENV)/*')); \
	if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi
	@if command -v cfn-lint >/dev/null 2>&1; then cfn-lint template.yaml && echo "cfn-lint: template.yaml ok"; \
	elif [ -x $(VENV)/bin/cfn-lint ]; then $(VENV)/bin/cfn-lint template.yaml && echo "cfn-lint: template.yaml ok"; \
	else echo "cfn-lint not found: install it with make moto (into .venv) or pip install cfn-lint"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

fmt: ## format the code
	gofmt -w $$(git ls-files '*.go')

bench: moto ## benchmarks of the event store, both implementations
	$(GO) test -run '^$$' -bench . -benchmem -count 3 ./internal/eventstore/...

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
	$(GO) run ./cmd/loadgen --rentals 400 --renters 8 --bikes 10
	$(GO) run ./cmd/loadgen --rentals 400 --renters 8 --bikes 10 --faults 0.2

bench-sweep: moto ## items one sweep reads vs a scan (SWEEP_BENCH_SIZES=1000,10000,100000 for more)
	$(GO) test -run '^$$' -bench BenchmarkSweepItemsRead -benchtime 3x -timeout 60m ./internal/deadline/

rie: $(RIE) ## install the Lambda Runtime Interface Emulator into bin/
$(RIE):
	GOBIN=$(CURDIR)/bin $(GO) install github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@$(RIE_VERSION)

# moto: make sure a moto_server is available: on PATH (as on the project's machines),
# or installed here into $(VENV) from PyPI at the pinned version.
moto: ## check for moto_server, or install the pinned moto into .venv
	@if [ -n "$$MOTO_SERVER" ] && [ -x "$$MOTO_SERVER" ]; then exit 0; fi; \
	if command -v moto_server >/dev/null 2>&1 || [ -x $(VENV)/bin/moto_server ]; then exit 0; fi; \
	echo "moto_server not found: installing moto[server]==$(MOTO_VERSION) and cfn-lint into $(VENV)"; \
	python3 -m venv $(VENV) && $(VENV)/bin/pip install --quiet 'moto[server]==$(MOTO_VERSION)' 'cfn-lint==$(CFN_LINT_VERSION)'

clean: ## remove build output and the local virtual environment
	rm -rf bin .aws-sam $(VENV)
