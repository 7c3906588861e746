package lua

// Code is the library's code without its entry points, for tests that
// call one of its local functions directly.
var Code = code
