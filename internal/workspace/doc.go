// Package workspace keeps the namespaces' workspaces: the host directories
// mounted read-write into the sandbox as its working directory (docs/tools.md, "workspace").
//
// Volumes is the one place that knows a workspace's size. Where codecell
// can mount (root, loop devices, mkfs.ext4), a workspace is an ext4
// filesystem image of its own, loop-mounted at its directory, and the kernel
// enforces its quota and its cap on entries; statfs says what it holds.
// Elsewhere it is a plain directory, and an index kept by inotify says what
// it holds: an execution that passes the limits is stopped (Run.Breach) and
// what it wrote past them removed (Run.End). Either way, the index says what
// an execution created, changed and deleted without walking the workspace,
// so an execution's cost does not grow with the number of files; the
// workspace is walked when first indexed, after the kernel dropped events,
// and, without inotify, around each execution.
//
// Every file operation (Workspace) goes through an [os.Root] opened on the
// workspace, so a path can only name something beneath it: absolute paths,
// ".." that climbs out and symbolic links that point out (or are absolute)
// are refused with [ErrOutside]. Errors name paths relative to the
// workspace, never the host path. Writes are atomic (a temporary file in the
// same directory, fsync, rename, fsync of the directory), so a crash leaves
// the old content or the new one, and they count against the quota.
//
// The sandbox's code writes the same directory at the same time, and it is
// not trusted: it can create symbolic links, FIFOs and deep trees, and swap
// a directory for a link between two system calls. What this package
// guarantees against it is only what os.Root guarantees: no access through a
// path outside the workspace; the index, too, opens every entry one
// component at a time without following links. In a plain directory the
// quota is not hard: the code writes what the disk takes between an event
// and its stop (then removed), and files it unlinked while keeping them
// open are not seen. Stores through a memory mapping report no event: the
// sparse files they could fill are looked at again around and during each
// run (sparse.go), and what changed between runs, when it took the
// workspace past its limits, is undone when the next run begins. Two
// processes writing one workspace are not serialized with each other
// (writers in one process are).
package workspace
