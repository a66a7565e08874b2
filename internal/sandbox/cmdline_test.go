package sandbox

import (
	"strings"
	"testing"
)

// TestHostPathsHidden: bubblewrap takes its options through a pipe, so no
// process in the sandbox shows the host paths of its mounts (the data dir,
// the workspace) on its command line or in its environment.
func TestHostPathsHidden(t *testing.T) {
	m, ws := newTestManager(t, Production, Limits{}, 1)
	code := `
import os
seen = []
for pid in os.listdir('/proc'):
    if pid.isdigit():
        for f in ('cmdline', 'environ'):
            try:
                seen.append(open('/proc/%s/%s' % (pid, f), 'rb').read().decode(errors='replace'))
            except OSError:
                pass
print('\n'.join(seen))
`
	r := exec1(t, m, ws, code, slack)
	if !r.OK || !strings.Contains(r.Stdout, "codecell_runner") {
		t.Fatalf("could not read the sandbox's command lines: %+v %q", r.Error, r.Stdout)
	}
	for _, host := range []string{ws, m.runtime} {
		if strings.Contains(r.Stdout, host) {
			t.Errorf("host path %s visible inside the sandbox:\n%s", host, r.Stdout)
		}
	}
}
