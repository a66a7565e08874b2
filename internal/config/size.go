package config

import (
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Binary size units, for writing limits in code.
const (
	KiB int64 = 1 << 10
	MiB int64 = 1 << 20
	GiB int64 = 1 << 30
	TiB int64 = 1 << 40
)

// sizeUnits maps a lower-case unit to its multiplier. Single letters ("512m")
// are refused on purpose: half the tools that accept them mean 1000 and half
// mean 1024.
var sizeUnits = map[string]int64{
	"":    1,
	"b":   1,
	"kib": KiB,
	"mib": MiB,
	"gib": GiB,
	"tib": TiB,
	"pib": 1 << 50,
	"eib": 1 << 60,
	"kb":  1e3,
	"mb":  1e6,
	"gb":  1e9,
	"tb":  1e12,
	"pb":  1e15,
	"eb":  1e18,
}

// formatUnits are the units FormatSize uses, largest first.
var formatUnits = []struct {
	name string
	n    int64
}{
	{"EiB", 1 << 60}, {"PiB", 1 << 50}, {"TiB", TiB}, {"GiB", GiB}, {"MiB", MiB}, {"KiB", KiB},
}

// sizeRE splits a size into a decimal number and a unit.
var sizeRE = regexp.MustCompile(`^([0-9]{1,30}(?:\.[0-9]{1,30})?)\s*([A-Za-z]*)$`)

// ParseSize parses a byte count such as "512MiB", "1GiB", "64KiB", "10MB",
// "1.5GiB" or "1024" (bytes). KiB, MiB, GiB, TiB, PiB and EiB are powers of
// 1024; KB, MB, GB, TB, PB and EB powers of 1000; B or no unit means bytes.
// Units are case-insensitive. A fraction of a byte is dropped.
func ParseSize(s string) (int64, error) {
	m := sizeRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, fmt.Errorf("%q is not a size (use e.g. 512MiB)", s)
	}
	mult, ok := sizeUnits[strings.ToLower(m[2])]
	if !ok {
		return 0, fmt.Errorf("%q is not a size (use e.g. 512MiB)", s)
	}
	r, ok := new(big.Rat).SetString(m[1])
	if !ok {
		return 0, fmt.Errorf("%q is not a size (use e.g. 512MiB)", s)
	}
	r.Mul(r, new(big.Rat).SetInt64(mult))
	n := new(big.Int).Quo(r.Num(), r.Denom())
	if !n.IsInt64() {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return n.Int64(), nil
}

// FormatSize formats n bytes in the largest binary unit that holds it
// exactly ("512MiB", "1GiB"), else in bytes ("1000B"). ParseSize reads the
// result back to n.
func FormatSize(n int64) string {
	if n < 0 && n != math.MinInt64 {
		return "-" + FormatSize(-n)
	}
	if n != 0 {
		for _, u := range formatUnits {
			if n%u.n == 0 {
				return strconv.FormatInt(n/u.n, 10) + u.name
			}
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}

// secondsRE is a plain number of seconds written as a string.
var secondsRE = regexp.MustCompile(`^[0-9]{1,12}(?:\.[0-9]{1,9})?$`)

// parseDuration parses a Go duration ("30s", "2m", "1h30m") or a plain number
// of seconds ("90", "0.5").
func parseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if secondsRE.MatchString(t) {
		f, err := strconv.ParseFloat(t, 64)
		if err == nil {
			return secondsToDuration(f)
		}
	}
	d, err := time.ParseDuration(t)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (use e.g. 30s or 2m)", s)
	}
	return d, nil
}

// secondsToDuration converts a JSON number of seconds.
func secondsToDuration(f float64) (time.Duration, error) {
	ns := f * float64(time.Second)
	if math.IsNaN(ns) || ns >= math.MaxInt64 || ns <= math.MinInt64 {
		return 0, fmt.Errorf("%v seconds is out of range", f)
	}
	return time.Duration(math.Round(ns)), nil
}

// formatDuration writes a duration the way a user would, without the
// trailing zero units time.Duration.String adds ("2m" rather than "2m0s").
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
