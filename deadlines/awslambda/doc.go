// Package awslambda holds the Lambda handlers of the deadlines: Stream runs a
// DynamoDB stream batch of a service's events through a handler (Projector, through
// a deadlines.Projection), reporting batch item failures, and Sweep runs a
// deadlines.Sweeper for an EventBridge Scheduler or rule invocation, or for one
// row's own one-time schedule. Neither starts Lambda: pass what they return to
// lambda.Start.
package awslambda
