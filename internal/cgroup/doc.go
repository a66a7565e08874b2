// Package cgroup bounds a group of processes together: one cgroup per
// sandbox, with a memory limit over all its processes (RAM, with no swap
// beyond it) and a process limit, created before the sandbox's first process
// starts (so every process it ever has is inside) and removed when it ends.
//
// Two layouts are supported:
//   - cgroup v2 with the memory controller, where codecell may create
//     cgroups: the root of the hierarchy (as root), or a subtree delegated to
//     codecell (systemd's Delegate=yes) that holds no other process. There
//     codecell moves itself into a leaf of its cgroup, as a delegated
//     service must, and makes each sandbox's cgroup beside it.
//   - cgroup v1 with a memory controller mounted, as root: each sandbox's
//     cgroup is made under codecell's own in the memory hierarchy, and in
//     the pids hierarchy where there is one.
//
// Anything else (no controller, no write access, a cgroup shared with other
// processes) is reported by Host as ErrUnavailable with the reason; callers
// then fall back to per-process limits.
//
// What this package does not protect against: memory the kernel does not
// charge to a cgroup (some kernel objects on old kernels), page cache that
// another cgroup brought in first, and pressure on the host as a whole. A
// memory limit makes the kernel's OOM killer end a process of the group; it
// does not pick which one.
package cgroup
