// Package workspace reads and writes the files of a namespace's workspace:
// the host directory mounted read-write into the sandbox as its working
// directory (SPEC §4.4).
//
// Every access goes through an [os.Root] opened on the workspace, so a path
// can only name something beneath it: absolute paths, ".." that climbs out
// and symbolic links that point out (or are absolute) are refused with
// [ErrOutside]. Errors name paths relative to the workspace, never the host
// path. Writes are atomic (a temporary file in the same directory, fsync,
// rename, fsync of the directory), so a crash leaves the old content or the
// new one, and they count against a quota.
//
// The sandbox's code writes the same directory at the same time, and it is
// not trusted: it can create symbolic links, FIFOs and deep trees, and swap
// a directory for a link between two system calls. What this package
// guarantees against it is only what os.Root guarantees: no access through a
// path outside the workspace. It does not protect against the code filling
// the workspace between the quota check and a write (the sandbox's quota
// watcher stops such code), and two processes writing one workspace are not
// serialized with each other (writers in one process are).
package workspace
