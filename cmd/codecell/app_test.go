package main

import "testing"

// TestAppCloseNilSafe: newApp's deferred clean-up calls close on an app
// that is only partly built; close skips what was never made.
func TestAppCloseNilSafe(t *testing.T) {
	(&app{}).close()
}
