// Package consolewords holds the operator console's words to the Go code that says
// the same things elsewhere: what caused an event, as the console's rental page and
// rentalctl history (rentalview.View.CauseOf) name it. Its test runs the console's
// own JavaScript in headless Chromium.
package consolewords
