package sandbox

import (
	"strings"
	"testing"
	"time"
)

// TestNothingOutlivesAnExecution: one execution of a warm sandbox tries to
// leave something for the next (a preloaded library, a file in /dev, a
// replaced /bin, a POSIX message queue, a vsock listener); the writes fail,
// and the next execution, in the same sandbox, finds none of it.
func TestNothingOutlivesAnExecution(t *testing.T) {
	for _, level := range []Level{Production, Hardened} {
		t.Run(string(level), func(t *testing.T) {
			m, ws := newTestManager(t, level, Limits{}, 1)
			plant := `
import ctypes, os, socket
left = []
for p in ["/etc/ld.so.preload", "/dev/evil", "/evil", "/etc/passwd", "/usr/lib/evil.so", "/proc/evil"]:
    try:
        open(p, "w").write("/tmp/x.so\n")
        left.append(p)
    except OSError:
        pass
for p in ["/bin", "/lib"]:
    try:
        os.rename(p, p + ".old"); os.symlink("/tmp", p)
        left.append(p)
    except OSError:
        pass
try:
    os.makedirs("/etc/evil.d")
    left.append("/etc/evil.d")
except OSError:
    pass
libc = ctypes.CDLL(None, use_errno=True)
if libc.mq_open(b"/codecell-evil", os.O_CREAT | os.O_RDWR, 0o600, None) >= 0:
    left.append("mqueue")
for family in (40, 16, 17):  # AF_VSOCK, AF_NETLINK, AF_PACKET
    try:
        socket.socket(family, socket.SOCK_STREAM if family == 40 else socket.SOCK_DGRAM).close()
        left.append("socket family %d" % family)
    except OSError:
        pass
try:
    socket.socketpair(socket.AF_INET).close()
    left.append("socketpair AF_INET")
except OSError:
    pass
result = left
`
			r := exec1(t, m, ws, plant, 60*time.Second)
			if !r.OK {
				t.Fatalf("plant: %+v", r.Error)
			}
			if got := toJSON(r.Result); strings.TrimSpace(got) != "[]" {
				// The mqueue and socket probes are the filter's (production);
				// under gVisor its own kernel answers them.
				if level == Production || strings.Contains(got, "/") {
					t.Errorf("%s: the code wrote or made %s", level, got)
				}
			}
			find := `
import ctypes, os
found = [p for p in ["/etc/ld.so.preload", "/dev/evil", "/evil", "/etc/evil.d", "/bin.old"] if os.path.lexists(p)]
if os.path.islink("/bin") and os.readlink("/bin") != "usr/bin":
    found.append("/bin")
libc = ctypes.CDLL(None, use_errno=True)
if libc.mq_open(b"/codecell-evil", os.O_RDWR, 0, None) >= 0:
    found.append("mqueue")
result = found
`
			r = exec1(t, m, ws, find, 60*time.Second)
			if !r.OK || strings.TrimSpace(toJSON(r.Result)) != "[]" {
				t.Errorf("%s: the next execution found %s (%+v)", level, toJSON(r.Result), r.Error)
			}
		})
	}
}

// TestUserSiteIgnored: a .pth file in the workspace's user site directory
// (HOME is the workspace) does not run in a later execution's python
// subprocess.
func TestUserSiteIgnored(t *testing.T) {
	m, ws := newTestManager(t, Production, Limits{}, 1)
	plant := `
import os
d = os.path.expanduser("~/.local/lib/python%d.%d/site-packages" % __import__("sys").version_info[:2])
os.makedirs(d, exist_ok=True)
open(d + "/evil.pth", "w").write("import sys; sys.stderr.write('PTH RAN')\n")
open(d + "/usercustomize.py", "w").write("import sys; sys.stderr.write('USERCUSTOMIZE RAN')\n")
`
	if r := exec1(t, m, ws, plant, 60*time.Second); !r.OK {
		t.Fatalf("plant: %+v", r.Error)
	}
	r := exec1(t, m, ws, "import subprocess\nsubprocess.run(['/usr/bin/python3', '-c', 'pass'], capture_output=True, text=True).stderr", 60*time.Second)
	if !r.OK || r.Result != "" {
		t.Errorf("a python subprocess ran the workspace's user site: %v %+v", r.Result, r.Error)
	}
}
