package awslambda

// RetryDelays are the delays of a failing record's retries in place, for the tests.
var RetryDelays = retryDelays
