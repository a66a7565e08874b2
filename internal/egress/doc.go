// Package egress is the one way out of a sandbox to the network: an HTTP
// proxy, served on a Unix socket that a sandbox with no network interfaces
// but loopback is given, that admits CONNECT tunnels and plain HTTP
// requests to the hosts it is told to and nowhere else.
//
// It resolves each host itself and dials the address it checked, so a name
// that resolves to a loopback, link-local, unspecified, multicast or cloud
// metadata address is refused, whatever the name (DNS rebinding included:
// the check and the dial use the same answer).
//
// What it does not protect against: a listed host that is itself hostile
// (it gets what the sandbox sends it), and addresses in private ranges,
// which are allowed because operators' package indexes live there.
package egress
