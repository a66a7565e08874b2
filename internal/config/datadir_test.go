package config

import "testing"

func TestDataDir(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	tests := []struct {
		name string
		flag string
		env  map[string]string
		root bool
		want string
	}{
		{"flag wins", "/srv/cc", map[string]string{"XDG_DATA_HOME": "/x", "HOME": "/h"}, true, "/srv/cc"},
		{"xdg", "", map[string]string{"XDG_DATA_HOME": "/x", "HOME": "/h"}, false, "/x/codecell"},
		{"home", "", map[string]string{"HOME": "/home/u"}, false, "/home/u/.local/share/codecell"},
		{"relative xdg is ignored", "", map[string]string{"XDG_DATA_HOME": "rel", "HOME": "/home/u"}, false, "/home/u/.local/share/codecell"},
		{"root", "", map[string]string{"HOME": "/root"}, true, "/var/lib/codecell"},
		{"root with xdg", "", map[string]string{"XDG_DATA_HOME": "/x", "HOME": "/root"}, true, "/x/codecell"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DataDir(tt.flag, env(tt.env), tt.root)
			if err != nil || got != tt.want {
				t.Fatalf("DataDir = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	if _, err := DataDir("", env(nil), false); err == nil {
		t.Fatal("no flag, XDG_DATA_HOME or HOME: want an error")
	}
}

func TestGCPercent(t *testing.T) {
	if p, ok := GCPercent(func(string) string { return "" }); !ok || p != DefaultGCPercent {
		t.Errorf("without GOGC: %d %v", p, ok)
	}
	if _, ok := GCPercent(func(k string) string { return map[string]string{"GOGC": "50"}[k] }); ok {
		t.Error("GOGC set by the user was overridden")
	}
}
