// Package store is codecell's database: the execution log, skill metadata,
// versions and code, the PII vault, sessions and environment choices. By
// default they are kept in one SQLite file (pure-Go driver
// modernc.org/sqlite, WAL journal); with a PostgreSQL URL (OpenWith, through
// pgx) they are kept there instead, shared by every replica that names it.
//
// Every method takes a namespace and every query filters by it: one
// namespace never reads or changes another's rows. The package knows
// nothing of MCP or of the sandbox; callers pass plain values.
//
// Schema changes are embedded SQL files under migrations/, written once for
// both databases (dialect.go turns SQLite's column types into PostgreSQL's)
// and applied in order by Open; replicas opening one PostgreSQL database at
// once take turns under an advisory lock. A database written by a newer
// binary is refused rather than guessed at (see SchemaTooNewError).
//
// Several writers (goroutines, processes on one SQLite file, replicas on one
// PostgreSQL) never decide by reading first and writing after: what must be
// unique (a skill's version numbers, a value's token, a token's value) is a
// unique constraint, and an insert that loses a race inserts nothing (ON
// CONFLICT DO NOTHING) and reads what won.
//
// What it does not protect against: the SQLite file is not encrypted, so
// PII vault values are readable by anyone who can read the data dir; access
// control is the file system's. In PostgreSQL they are readable by whoever
// the database lets read them, and travel as the connection's sslmode
// allows (use sslmode=verify-full off the machine). A commit is as durable
// as the server's synchronous_commit makes it.
package store
