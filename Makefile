# The interface for people: `make run`, `make test`, `make build`, `make lint`,
# `make bench`. CI runs `make test` (see .ci/run).

SHELL := /bin/bash
GO ?= go
MOTO_VERSION := 5.2.1
VENV := .venv
PKGS := ./...

FUNCTIONS := command process projector sweep
# Lambda binaries: static, no RPC mode, stripped; provided.al2023 on arm64.
LAMBDA_ENV := CGO_ENABLED=0 GOOS=linux GOARCH=arm64
LAMBDA_FLAGS := -tags lambda.norpc -ldflags "-s -w" -trimpath

.PHONY: help run test lint vet fmt bench bench-sweep build moto clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-8s %s\n", $$1, $$2}'

run: moto ## run the service locally: moto, the tables and the HTTP API on 127.0.0.1:3000 (or PORT)
	$(GO) run ./cmd/local

test: moto lint ## go vet, gofmt check and every test, the DynamoDB ones against a local moto
	$(GO) test -count=1 -timeout 15m $(PKGS)

lint: vet ## go vet and a gofmt check
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './$(VENV)/*')); \
	if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

fmt: ## format the code
	gofmt -w $$(git ls-files '*.go')

bench: moto ## benchmarks of the event store, both implementations
	$(GO) test -run '^$$' -bench . -benchmem -count 3 ./internal/eventstore/...

build: ## build every Lambda function into bin/<function>/bootstrap (linux/arm64)
	@for f in $(FUNCTIONS); do \
		echo "build functions/$$f"; \
		$(LAMBDA_ENV) $(GO) build $(LAMBDA_FLAGS) -o bin/$$f/bootstrap ./functions/$$f || exit 1; \
	done

bench-sweep: moto ## items one sweep reads vs a scan (SWEEP_BENCH_SIZES=1000,10000,100000 for more)
	$(GO) test -run '^$$' -bench BenchmarkSweepItemsRead -benchtime 3x -timeout 60m ./internal/deadline/

# moto: make sure a moto_server is available: on PATH (as on the project's machines),
# or installed here into $(VENV) from PyPI at the pinned version.
moto: ## check for moto_server, or install the pinned moto into .venv
	@if [ -n "$$MOTO_SERVER" ] && [ -x "$$MOTO_SERVER" ]; then exit 0; fi; \
	if command -v moto_server >/dev/null 2>&1 || [ -x $(VENV)/bin/moto_server ]; then exit 0; fi; \
	echo "moto_server not found: installing moto[server]==$(MOTO_VERSION) into $(VENV)"; \
	python3 -m venv $(VENV) && $(VENV)/bin/pip install --quiet 'moto[server]==$(MOTO_VERSION)'

clean: ## remove build output and the local virtual environment
	rm -rf bin .aws-sam $(VENV)
