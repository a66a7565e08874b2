// Package gate is the one place where personal data is tokenized on its way
// out of codecell: the privacy boundary that server, httpapi and cmd share.
// Everything that leaves toward a model or an operator passes it, whole,
// before any cut to a size limit:
//
//   - every MCP result and error (every string of every content type:
//     text, MIME types, annotations, links, _meta; structured content;
//     resource contents; every number) and every notification, by the
//     server's middlewares (server/gatemw.go);
//   - every blob (image and audio data, resource blobs, file pages sent
//     as base64), read in the form its bytes mean (see blob.go): text in
//     its encoding, images by their metadata; what it cannot read is
//     withheld;
//   - every REST and dashboard answer, by package httpapi (Options.Gate);
//   - every log line, by LogHandler;
//   - every excerpt of an upstream server's stderr, by Redact, line by
//     line as it is written;
//   - the execution log, written tokenized.
//
// Cuts to a size limit (output, progress lines, log excerpts, file pages)
// ask Cut where to cut: never inside a value the detectors find in the
// whole text. Restoring tokens happens only host-side, into the arguments
// of upstream tool calls and into path arguments; the values restored for
// a request are tokenized again wherever they come back in its answer,
// whether or not a detector finds them there.
//
// Tokens are issued by the vault of the namespace the output goes to;
// what goes only to operators (log lines, upstream stderr, shown to every
// namespace) uses a vault of its own, whose tokens no namespace can
// restore; the host's own DNS resolvers are left as they are there. It
// does not protect against what the detectors miss (see package pii),
// against values encoded out of sight in text (base64 inside a string,
// text drawn as pixels of an image), nor against a value split by the
// code itself across outputs or across the pages of a file that is not
// UTF-8.
//
// Only New makes a Gate: the zero value, or a nil *Gate, refuses every
// answer (an error, ErrWithheld) rather than pass it unexamined; a Gate
// made with pii.mode "off" passes everything (Off).
package gate
