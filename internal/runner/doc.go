// Package runner holds the Python side of codecell, embedded in the binary,
// and installs it where a sandbox can mount it read-only.
//
// The Python files are the fork server (zygote) and the execution runner.
// PROTOCOL.md, next to this file, describes what they speak with the host;
// the frame types and method names are constants of package channel, and
// the contract test here holds the Python to them.
package runner
