package strictjson

// TooDeep exposes the depth scan to the external tests.
var TooDeep = tooDeep
