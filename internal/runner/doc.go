// Package runner holds the Python side of codecell, embedded in the binary,
// and installs it where a sandbox can mount it read-only.
//
// The Python files are the fork server (zygote) and the execution runner; see
// python/codecell_runner.py for the protocol they speak with the host.
package runner
