// Package capacity measures what DynamoDB bills for. A Counter is an AWS SDK
// middleware: it records every call of a client built with it, with the items and
// bytes each call read and wrote, and turns them into read and write request units
// by DynamoDB's published rules (ReadUnits, WriteUnits, Index.IndexWriteUnits,
// ItemSize). It is installed on a client's APIOptions, so the code it measures does
// not change; Total and GroupBy add the calls up. A cost test counts with it what a
// Deadlines table (package dynamo) or any other code on the SDK costs per request.
//
// It is an instrument for tests and benchmarks: to know the billed size of an item
// a write changes it reads the item before and after the write through a client of
// its own, reads that AWS would bill like any other.
//
// The rules, from the Amazon DynamoDB Developer Guide:
//   - item sizes: "DynamoDB item sizes and formats"
//     (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html);
//   - read and write units: "DynamoDB read and write operations"
//     (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html),
//     formerly "Managing Throughput Settings on Provisioned Tables", whose rules
//     on-demand request units follow one for one;
//   - index writes: "Global secondary indexes", section "Write capacity units"
//     (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html);
//   - transactions: "Amazon DynamoDB Transactions: How It Works", section "Capacity
//     management for transactions"
//     (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis.html).
package capacity
