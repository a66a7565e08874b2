// Package seccomp builds the seccomp filter that codecell's production sandbox
// hands to bubblewrap (bwrap --seccomp FD), and renders the same rules as an
// OCI seccomp profile ([OCIProfile]) for the hardened sandbox, whose gVisor
// enforces it in its own kernel.
//
// The filter is allow-by-default: the sandboxed Python may make any system
// call except those listed by [Rules], which fail with EPERM (ENOSYS for
// clone3), so that Python raises a clean PermissionError instead of dying.
// A call made through a foreign system call ABI (i386 via int 0x80 on amd64,
// AArch32 on arm64) kills the process, because the rules are written for the
// native ABI's numbers only. For the same reason a call number the native
// syscall table (go-seccomp-bpf's) does not name fails with ENOSYS, as on a
// kernel without the call: calls added to Linux after the table, which the
// rules were never checked against, and x32 calls on amd64.
//
// Arguments are compared on their low 32 bits only, because that is all the
// kernel reads of the arguments the filter inspects (int, unsigned int, and
// clone's flags); comparing all 64 bits, as generic filter compilers do,
// lets a caller slip past a rule by setting the high bits (CVE-2019-10063).
//
// # What the filter does not protect against
//
// The filter removes kernel attack surface that untrusted Python has no use
// for; it is one layer of the sandbox, not the sandbox. It does not protect
// against:
//
//   - bugs in the kernel reachable through the many system calls it allows
//     (read, write, mmap, futex, the file system, sockets of allowed kinds);
//   - side channels (timing, caches, speculative execution);
//   - resource exhaustion (memory, processes, CPU, disk): the sandbox's
//     cgroup and rlimit settings handle that;
//   - what the process can reach through the calls it is allowed: files,
//     network and other processes are confined by bubblewrap's namespaces,
//     mounts and dropped capabilities, not by this filter;
//   - anything done before the filter is installed, or by processes outside
//     the sandbox;
//   - the calls the kernel makes without consulting seccomp: uretprobe and
//     uprobe on x86-64, which work only from a uprobe trampoline.
package seccomp
