// Package channel is the framed, bidirectional protocol between the host and
// the code running in a sandbox.
//
// A frame is a 4-byte big-endian payload length followed by that many bytes of
// a JSON object with a "type" field. Both directions use the same framing. The
// sandbox side is hostile: a Reader never trusts a length, never allocates
// more than its limit, and turns every malformed frame into an error rather
// than a panic. Whoever owns the channel treats any error as the end of that
// execution.
//
// The frame types and host-call methods are the Type and Method constants.
// internal/runner/PROTOCOL.md describes the whole conversation: each frame's
// direction, fields and moment, the zygote's control socket, and each
// method's params, reply and errors.
package channel
