// Package sandbox runs Python in an OS-level sandbox with limits, from a warm
// pool, and speaks the channel protocol with the code.
//
// Levels (see the README's "Isolation levels"):
//   - development: a plain subprocess with resource limits. No isolation.
//   - production: bubblewrap (user, PID, network, IPC, UTS, mount and cgroup
//     namespaces, all capabilities dropped, an unprivileged user, read-only
//     system directories, a private size-capped /tmp) plus a seccomp filter.
//   - hardened: the same policy under gVisor (runsc), whose user-space kernel
//     stands between the code and the host kernel.
//
// Warm pool. In development and production a sandbox is a fork server (the
// zygote): a Python process started ahead of need that never runs user code.
// It forks each execution's process ahead of need (having run the execution
// path once itself, so that the child inherits what that initialised) and
// hands the host that process's channel; an execution is then one message
// straight to a waiting process, which receives its stdout and stderr pipes
// with it.
// After the process exits, the zygote kills every other process in the
// sandbox, reaps them and wipes /tmp and /dev/shm before it forks the next
// one, so executions share nothing but the namespace's workspace, which is
// meant to persist. The pool hands out the sandbox that has waited longest
// and counts the busy ones, which come back within a millisecond of their
// result. Under gVisor descriptors cannot be passed in, so a hardened
// sandbox's fork server lends the container's stdin and stdout to one child
// at a time, with tokens that keep one execution's leftovers off the next
// one's channel (see gvisor); a hardened sandbox that served an execution
// comes back in tens of milliseconds, so the pool waits longer for it.
// A server that releases idle namespaces also keeps a few production
// sandboxes started for no namespace yet, into which a namespace with an
// empty pool has its workspace mounted (see unbound.go).
//
// What this package does not protect against: bugs in the kernel's allowed
// system calls (production), bugs in gVisor (hardened), CPU and memory side
// channels, and anything at all in development. The limits bound resource
// use per execution; they do not stop code from using what they allow.
// Memory is bounded per sandbox (all its processes, memory files included)
// only where the host gives codecell a cgroup (package cgroup); elsewhere
// per process (RLIMIT_AS), and memory files written but never mapped escape
// it. In production every sandbox's user is the same host user, so per-user
// kernel limits (inotify instances) are shared by the sandboxes running at
// once; /proc/self/mountinfo shows, for each directory bound in (the
// workspace unless it is an image, the skills, the servers package), its
// path within its filesystem. Each sandbox has a boot_id of its own.
// The package knows nothing of MCP.
package sandbox
