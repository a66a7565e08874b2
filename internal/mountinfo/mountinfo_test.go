package mountinfo

import (
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	text := `22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
35 22 0:30 / /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory
36 22 7:0 /ws /data/work\040space rw master:3 - ext4 /dev/loop0 rw,errors=remount-ro
short line
40 22 0:31 / /x rw - tmpfs
`
	got, err := Parse(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	want := []Mount{
		{Root: "/", Point: "/", FSType: "ext4", Source: "/dev/sda1", Super: "rw"},
		{Root: "/", Point: "/sys/fs/cgroup/memory", FSType: "cgroup", Source: "cgroup", Super: "rw,memory"},
		{Root: "/ws", Point: "/data/work space", FSType: "ext4", Source: "/dev/loop0", Super: "rw,errors=remount-ro"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}

func TestUnescape(t *testing.T) {
	for in, want := range map[string]string{
		`plain`: "plain", `a\040b`: "a b", `tab\011x`: "tab\tx", `back\134slash`: `back\slash`,
		`bad\09x`: `bad\09x`, `end\04`: `end\04`, `\`: `\`,
	} {
		if got := Unescape(in); got != want {
			t.Errorf("Unescape(%q) = %q, want %q", in, got, want)
		}
	}
}
