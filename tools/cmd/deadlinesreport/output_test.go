package main

// output is the benchmarks' output, trimmed: one size.
const output = `goos: linux
goarch: amd64
cpu: Intel(R) Xeon(R) Processor
BenchmarkWhatADeadlineCosts-2   	      20	  1 ns/op	         1.000 idle-sweep-calls/shard	         0.5000 idle-sweep-ru/shard	         1.000 open-index-wu	         1.000 open-table-wu	         1.000 settle-index-wu	         1.000 settle-table-wu
BenchmarkApplyOnMoto-2   	    2000	   1 ns/op	        12.77 min/200k-applies	         3.831 ms/apply
BenchmarkSizing/inprocess/shards=4/rows=100000-2         	       1	1 ns/op	        25.18 busiest-partition-%	      5036 busiest-partition-wu/s	        25.00 even-partition-%	         2.000 index-wu/deadline	         0.0001200 sweep-calls/row	    100000 sweep-items-read	        12.00 sweep-queries	      1050 sweep-ru	         2.000 table-wu/deadline
BenchmarkSizing/inprocess/shards=16/rows=100000-2        	       1	1 ns/op	         6.441 busiest-partition-%	      1288 busiest-partition-wu/s	         6.250 even-partition-%	         2.000 index-wu/deadline	         0.0001600 sweep-calls/row	    100000 sweep-items-read	        16.00 sweep-queries	      1056 sweep-ru	         2.000 table-wu/deadline
BenchmarkSizing/inprocess/shards=32/rows=100000-2        	       1	1 ns/op	         3.275 busiest-partition-%	       655.0 busiest-partition-wu/s	         3.125 even-partition-%	         2.000 index-wu/deadline	         0.0003200 sweep-calls/row	    100000 sweep-items-read	        32.00 sweep-queries	      1066 sweep-ru	         2.000 table-wu/deadline
BenchmarkSizing/inprocess/shards=64/rows=100000-2        	       1	1 ns/op	         1.685 busiest-partition-%	       337.0 busiest-partition-wu/s	         1.562 even-partition-%	         2.000 index-wu/deadline	         0.0006400 sweep-calls/row	    100000 sweep-items-read	        64.00 sweep-queries	      1076 sweep-ru	         2.000 table-wu/deadline
BenchmarkSweepReads/inprocess/shards=32/open=1000/due=0pct-2         	       1	   1 ns/op	         0 items-read	        32.00 queries	        16.00 read-units
BenchmarkSweepReads/inprocess/shards=32/open=1000/due=1pct-2         	       1	   1 ns/op	        10.00 items-read	        32.00 queries	        16.00 read-units
BenchmarkSweepReads/inprocess/shards=32/open=1000/due=10pct-2        	       1	   1 ns/op	       100.0 items-read	        32.00 queries	        16.00 read-units
BenchmarkSweepReads/inprocess/shards=32/open=1000/due=100pct-2       	       1	   1 ns/op	      1000 items-read	        32.00 queries	        16.00 read-units
`
