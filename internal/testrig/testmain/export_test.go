package testmain

// TakeTurn is takeTurn, for the tests.
var TakeTurn = takeTurn
