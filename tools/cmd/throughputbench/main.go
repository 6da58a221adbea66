// Throughputbench measures the rental requests per second that one shard of the
// Events table's stream sustains through the rental-payment process and the
// projector (package throughput), before and after concurrency within a batch and
// ParallelizationFactor, and derives the factor and shards a target rate needs.
// Behind `make bench-throughput`; it prints markdown.
//
//	throughputbench [-rentals 200] [-store-latency 8ms] [-providers 0s,50ms,300ms]
//	                [-concurrency 1,32] [-parallelization 1,2] [-target 100]
//
// Concurrency 1 at ParallelizationFactor 1 is the consumers as they were: one record
// at a time. Exit status 1 when a measurement fails, 2 on a usage error.
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/bikerental/bikerental/deadlines/awslambda"
	"github.com/bikerental/bikerental/internal/dev/streampoll"
	"github.com/bikerental/bikerental/tools/throughput"
)

func main() {
	rentals := flag.Int("rentals", 200, "rentals requested per measurement")
	batch := flag.Int("batch", 100, "the event source mapping's BatchSize")
	storeLatency := flag.Duration("store-latency", 8*time.Millisecond, "latency of every DynamoDB call")
	providers := flag.String("providers", "0s,50ms,300ms", "payment provider latencies, comma-separated")
	concurrency := flag.String("concurrency", "1,"+strconv.Itoa(awslambda.DefaultConcurrency), "STREAM_CONCURRENCY values, comma-separated")
	parallel := flag.String("parallelization", "1,2", "ParallelizationFactor values, comma-separated (with concurrency 1, only 1 is measured)")
	target := flag.Float64("target", 100, "rentals a second to size the mapping for")
	flag.Parse()
	latencies, err := durations(*providers)
	cs, err2 := ints(*concurrency, awslambda.MaxConcurrency)
	ps, err3 := ints(*parallel, streampoll.MaxParallelization)
	if err == nil {
		err = err2
	}
	if err == nil {
		err = err3
	}
	if err != nil || *rentals < 1 || *batch < 1 || *target <= 0 {
		fmt.Fprintln(os.Stderr, "throughputbench:", err)
		flag.Usage()
		os.Exit(2)
	}

	fmt.Printf("%d rentals per measurement, batches of %d, %s per DynamoDB call; %d CPUs, %s/%s, %s\n\n",
		*rentals, *batch, *storeLatency, runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version())
	fmt.Println("| provider | STREAM_CONCURRENCY | ParallelizationFactor | process: requests/s | projector: rentals/s |")
	fmt.Println("| ---: | ---: | ---: | ---: | ---: |")
	type key struct {
		latency time.Duration
		c       int
	}
	rate := map[key]float64{}
	for _, l := range latencies {
		for _, c := range cs {
			for _, p := range ps {
				if c == 1 && p != 1 {
					continue
				}
				res, err := throughput.Run(context.Background(), throughput.Config{
					Rentals: *rentals, BatchSize: *batch, Concurrency: c, Parallelization: p,
					StoreLatency: *storeLatency, ProviderLatency: l, Timeout: time.Minute,
				})
				if err != nil {
					fmt.Fprintf(os.Stderr, "throughputbench: provider %s, concurrency %d, factor %d: %v\n", l, c, p, err)
					os.Exit(1)
				}
				if p == 1 {
					rate[key{l, c}] = res.ProcessRate()
				}
				fmt.Printf("| %s | %d | %d | %.1f | %.1f |\n", l, c, p, res.ProcessRate(), res.ProjectorRate())
			}
		}
	}

	fmt.Printf("\nAt %.0f rentals a second, from the process's rate at ParallelizationFactor 1 (the projector is faster):\n\n", *target)
	fmt.Println("| provider | STREAM_CONCURRENCY | ParallelizationFactor needed | shards needed |")
	fmt.Println("| ---: | ---: | ---: | ---: |")
	for _, l := range latencies {
		for _, c := range cs {
			r, ok := rate[key{l, c}]
			if !ok {
				continue
			}
			factor := int(math.Ceil(*target / r))
			shards := 1
			if factor > streampoll.MaxParallelization {
				shards = int(math.Ceil(float64(factor) / streampoll.MaxParallelization))
				factor = streampoll.MaxParallelization
			}
			fmt.Printf("| %s | %d | %d | %d |\n", l, c, factor, shards)
		}
	}
}

func durations(s string) ([]time.Duration, error) {
	var out []time.Duration
	for _, f := range strings.Split(s, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(f))
		if err != nil || d < 0 {
			return nil, fmt.Errorf("latency %q: want a duration such as 50ms", f)
		}
		out = append(out, d)
	}
	return out, nil
}

func ints(s string, most int) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > most {
			return nil, fmt.Errorf("%q: want whole numbers from 1 to %d", f, most)
		}
		out = append(out, n)
	}
	return out, nil
}
