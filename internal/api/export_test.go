package api

// TooDeep exposes the depth scan to the external tests.
var TooDeep = tooDeep
