// Package mountinfo reads /proc/<pid>/mountinfo (proc(5)): the cgroup
// package finds the cgroup hierarchies in it, the workspace package the
// filesystem mounted at a workspace.
package mountinfo

import (
	"bufio"
	"io"
	"slices"
	"strconv"
	"strings"
)

// Mount is one line of mountinfo, its paths unescaped.
type Mount struct {
	Root   string // the root of the mount within its filesystem
	Point  string // where it is mounted
	FSType string
	Source string
	Super  string // the superblock's options
}

// Parse reads mountinfo text. Lines it cannot read are skipped.
func Parse(r io.Reader) ([]Mount, error) {
	var mounts []Mount
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		fields := strings.Fields(sc.Text())
		sep := slices.Index(fields, "-")
		if sep < 5 || len(fields) < sep+4 {
			continue
		}
		mounts = append(mounts, Mount{Root: Unescape(fields[3]), Point: Unescape(fields[4]),
			FSType: fields[sep+1], Source: Unescape(fields[sep+2]), Super: fields[sep+3]})
	}
	return mounts, sc.Err()
}

// Unescape undoes mountinfo's octal escapes (\040 for a space).
func Unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
