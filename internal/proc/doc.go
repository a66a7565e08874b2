// Package proc builds the host subprocesses codecell starts, so that none
// outlives it or leaves children behind.
//
// Every subprocess is made by [Command]. A test in internal/ fails on a call
// of exec.Command or exec.CommandContext anywhere else in the module's
// non-test code.
package proc
