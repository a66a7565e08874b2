// Package procdir gives each codecell process a directory of its own under a
// parent that several processes share (the data dir's state/proc), for what
// a process generates for itself alone, and removes the directories of
// processes that are gone.
//
// Several processes use one data dir at once: a desktop host starts a
// server per window, and codecell exec or codecell tools run beside them.
// Each generates the servers package of its own upstreams for its own
// sandboxes; written to one shared place, the last to write would pull it
// out from under the others' code.
//
// A process holds its directory with an exclusive flock(2) on the lock file
// inside it for as long as it lives. The kernel drops the lock when the
// process ends, however it ends (kill -9 included), so a directory whose lock
// can be taken belongs to nobody, and Claim removes it. The name,
// <pid>-<random>, says which process it was for a person looking; nothing
// relies on the pid, which a later process (or another host sharing the data
// dir) may reuse.
//
// It does not protect against a filesystem on which flock does not work
// between the processes that share it (some network filesystems with
// locking turned off): there a live process's directory could be taken for
// a dead one's and removed.
package procdir
