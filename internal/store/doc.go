// Package store is codecell's embedded database: the execution log, skill
// metadata and versions, the PII vault, sessions and environment choices,
// kept in one SQLite file (pure-Go driver modernc.org/sqlite, WAL journal).
//
// Every method takes a namespace and every query filters by it: one
// namespace never reads or changes another's rows. The package knows
// nothing of MCP or of the sandbox; callers pass plain values.
//
// Schema changes are embedded SQL files under migrations/, applied in order
// by Open. A database written by a newer binary is refused rather than
// guessed at (see SchemaTooNewError).
//
// What it does not protect against: the file is not encrypted, so PII vault
// values are readable by anyone who can read the data dir; access control
// is the file system's.
package store
