// Package skills keeps the saved skills of each namespace: small Python
// modules an agent saves once and imports in later executions with
// "from skills.<name> import f" (docs/tools.md, "skills").
//
// A skill lives in two places. The database (package store) holds every
// version's metadata and code; it is the source of truth. The files of the
// latest version are materialised beside it, under Dir/<namespace>/:
//
//	<name>/<name>.py     the code, byte for byte
//	<name>/__init__.py   generated: re-exports the module's names, so that
//	                     "from skills.<name> import f" finds f
//	<name>/SKILL.md      front matter (name, description, tags, version,
//	                     created) and the description
//
// Dir/<namespace>/ is what a sandbox mounts read-only as the "skills"
// package. It is never replaced, only written into, so a mount made before a
// save sees the save.
//
// # Durability
//
// Every file is written atomically (a temporary file, fsync, rename, fsync
// of the directory). Save commits the new version to the database first and
// writes the files after; Delete deletes the rows first, then renames the
// skill's directory out of sight and removes it. A kill -9 between the two
// steps leaves files that disagree with the database, never a half-written
// file; Sync repairs that: it rewrites the files of every skill whose files
// are missing or differ from the database's latest version, and removes
// whatever under the namespace's directory is not a skill there (deleted
// skills, temporary files). Dir runs Sync the first time a process uses a
// namespace, so a restart repairs what a crash left. A saved skill (Save
// returned) is therefore never lost, and a deleted one never comes back.
//
// Changes to one namespace are serialized by an advisory lock file
// (flock) beside its directory, so two processes on one data dir (a server
// and the codecell skills command) do not interleave their writes.
//
// # What it does not do
//
// Validation here is about names and sizes. Whether the code compiles is
// asked of a Compiler, which the server implements by running compile() in
// the caller's sandbox: no untrusted bytes are parsed by an unsandboxed
// interpreter. Saved code is not reviewed in any way; it runs with exactly
// the rights of the code that imports it. In the development isolation level
// the directory is the host's and the code could write it; only the
// production and hardened levels mount it read-only.
package skills
