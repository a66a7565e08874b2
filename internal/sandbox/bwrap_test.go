package sandbox

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestBwrapArgs reads the production policy as data: every isolation flag
// the README's "Isolation levels" names is there, and only the mounts it allows.
func TestBwrapArgs(t *testing.T) {
	spec := bwrapSpec{Python: "/usr/bin/python3", CtlFD: 3, SeccompFD: 4, BootIDFD: 6, Runtime: "/data/rt", Workspace: "/data/ws/a", TmpSize: 1 << 20}
	args := bwrapArgs(spec)
	joined := " " + strings.Join(args, " ") + " "
	for _, want := range []string{
		"--unshare-user", "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
		"--disable-userns", "--as-pid-1", "--die-with-parent", "--new-session", "--cap-drop ALL", "--uid 65534", "--gid 65534",
		"--ro-bind /usr /usr", "--ro-bind /proc/sys /proc/sys", "--ro-bind-data 6 /proc/sys/kernel/random/boot_id", "--size 1048576 --tmpfs /tmp", "--size 1048576 --tmpfs /dev/shm",
		"--ro-bind /data/rt /codecell", "--bind /data/ws/a /workspace", "--chdir /workspace", "--clearenv", "--seccomp 4",
		"-- /usr/bin/python3 -I -B /codecell/codecell_runner.py --zygote 3 --isolated",
	} {
		if !strings.Contains(joined, " "+want+" ") {
			t.Errorf("missing %q in %s", want, joined)
		}
	}
	// Nothing else of the host is writable, and no /etc file beyond the list.
	for i, a := range args {
		switch a {
		case "--bind", "--dev-bind":
			if args[i+1] != "/data/ws/a" {
				t.Errorf("writable bind of %s", args[i+1])
			}
		case "--ro-bind-try":
			if !slices.Contains(etcFiles, args[i+1]) {
				t.Errorf("unexpected host file %s", args[i+1])
			}
		}
	}
	if strings.Contains(joined, "--gen") || strings.Contains(joined, GenMount) {
		t.Error("servers package mounted without a Gen directory")
	}
	spec.Gen = "/data/gen"
	joined = strings.Join(bwrapArgs(spec), " ")
	if !strings.Contains(joined, "--ro-bind /data/gen /codecell/gen") || !strings.HasSuffix(joined, "--gen /codecell/gen") {
		t.Errorf("servers package: %s", joined)
	}
}

func TestNewBootID(t *testing.T) {
	re := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\n$`)
	a, b := newBootID(), newBootID()
	if !re.Match(a) || !re.Match(b) {
		t.Errorf("not boot_id's format: %q %q", a, b)
	}
	if string(a) == string(b) {
		t.Errorf("two sandboxes got the same boot_id %q", a)
	}
}

// TestBwrapRuntimeFiles: the runner is written into the sandbox from
// descriptors, each file after its directory, with the mount points of the
// servers package and the skills, and never bound from the host (a bind
// shows its host path in the sandbox's mount table).
func TestBwrapRuntimeFiles(t *testing.T) {
	spec := bwrapSpec{Python: "/usr/bin/python3", CtlFD: 3, Runtime: "/data/rt", Workspace: "/data/ws/a", TmpSize: 1 << 20,
		RuntimeFiles: []bwrapFile{{Path: "codecell_runner.py", FD: 7}, {Path: "codecell/__init__.py", FD: 8}, {Path: "codecell/_rpc.py", FD: 9}}}
	joined := " " + strings.Join(bwrapArgs(spec), " ") + " "
	for _, want := range []string{
		"--perms 0755 --dir /codecell --perms 0444 --file 7 /codecell/codecell_runner.py --perms 0755 --dir /codecell/codecell --perms 0444 --file 8 /codecell/codecell/__init__.py --perms 0444 --file 9 /codecell/codecell/_rpc.py",
		"--dir /codecell/gen", "--dir /codecell/skills", "--remount-ro /",
	} {
		if !strings.Contains(joined, " "+want+" ") {
			t.Errorf("missing %q in %s", want, joined)
		}
	}
	if strings.Contains(joined, "/data/rt") {
		t.Errorf("the runner's host directory is bound: %s", joined)
	}
	if strings.Index(joined, "--file 9") > strings.Index(joined, "--remount-ro /") {
		t.Errorf("the runner's files are written after the root is read-only: %s", joined)
	}
}
