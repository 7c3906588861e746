package algorithms

import (
	"archive/zip"
	"bytes"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The committed table is what the generator makes of this Go's zones.
func TestZoneTableIsGenerated(t *testing.T) {
	out, err := exec.Command("go", "run", "./internal/zonegen", "-o", "-").Output()
	if err != nil {
		t.Fatalf("go run ./internal/zonegen: %v", err)
	}
	have, err := os.ReadFile("zones_table.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, have) {
		t.Fatal("zones_table.go differs from this Go's zone database: run go generate ./algorithms/")
	}
}

// goZones reads Go's own zone database, as the generator does.
func goZones(t *testing.T) map[string][]byte {
	t.Helper()
	root, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Fatalf("go env GOROOT: %v", err)
	}
	z, err := zip.OpenReader(filepath.Join(strings.TrimSpace(string(root)), "lib", "time", "zoneinfo.zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	m := map[string][]byte{}
	for _, f := range z.File {
		r, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		m[f.Name], err = io.ReadAll(r)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// tableZones lists the zones zoneTable holds.
func tableZones() []string {
	var names []string
	for _, l := range strings.Split(strings.Trim(zoneTable, "\n"), "\n") {
		name, _, _ := strings.Cut(l, "\t")
		names = append(names, name)
	}
	return names
}

// Every zone of the table gives the periods the full database gives, for
// every unit (a week from each day), at random instants of the next three
// years and around each offset change in them.
func TestZonesMatchGoDatabase(t *testing.T) {
	full := goZones(t)
	names := tableZones()
	if len(names) != len(full) {
		t.Errorf("the table holds %d zones, Go's database %d", len(names), len(full))
	}
	cals := []Calendar{{Unit: Hour}, {Unit: Day}, {Unit: Month}}
	for d := time.Sunday; d <= time.Saturday; d++ {
		cals = append(cals, Calendar{Unit: Week, WeekStart: d})
	}
	now := time.Now().Unix()
	horizon := now + 3*366*86400
	rng := rand.New(rand.NewPCG(31, 2))
	edges, checks := 0, 0
	for _, name := range names {
		want, err := time.LoadLocationFromTZData(name, full[name])
		if err != nil {
			t.Fatalf("%s in Go's database: %v", name, err)
		}
		have, err := loadZone(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var at []int64
		for range 40 {
			at = append(at, now+rng.Int64N(horizon-now))
		}
		for s := now; ; {
			_, end := span(s, want)
			if end > horizon {
				break
			}
			if off, _ := span(end, want); off != zoneOffset(end-1, want) {
				at = append(at, end-1, end, end+1)
				edges++
			}
			s = end
		}
		for _, v := range at {
			if wo, ho := zoneOffset(v, want), zoneOffset(v, have); wo != ho {
				t.Fatalf("%s at %d: offset %d, want %d", name, v, ho, wo)
			}
			for _, c := range cals {
				c.Zone = name
				if w, h := c.walk(v, want), c.walk(v, have); w != h {
					t.Fatalf("%s %v (week from %v) at %d: %v, want %v", name, c.Unit, c.WeekStart, v, h, w)
				}
				checks++
			}
		}
	}
	t.Logf("%d zones, %d offset changes, %d period checks", len(names), edges, checks)
}

// Links (US/Eastern) answer as their zones do; unknown names, Local and
// names the table could be fooled by are refused.
func TestZoneNames(t *testing.T) {
	at := time.Date(2027, 3, 14, 7, 30, 0, 0, time.UTC).Unix()
	for alias, zone := range map[string]string{"US/Eastern": "America/New_York", "UTC": "Etc/UTC", "Asia/Calcutta": "Asia/Kolkata", "GB": "Europe/London"} {
		for _, u := range []CalendarUnit{Hour, Day, Week, Month} {
			a, err1 := Calendar{Unit: u, Zone: alias}.bounds(at)
			z, err2 := Calendar{Unit: u, Zone: zone}.bounds(at)
			if err1 != nil || err2 != nil || a != z {
				t.Errorf("%s %v: %v %v, %s: %v %v", alias, u, a, err1, zone, z, err2)
			}
		}
	}
	for _, name := range []string{"", "Local", "Mars/Olympus", "europe/berlin", "Europe/Berlin\tCET-1", "Europe", "Berlin", "Europe/Berlin/"} {
		if _, err := location(name); err == nil {
			t.Errorf("zone %q loaded", name)
		}
		if err := (Calendar{Unit: Day, Zone: name}).validate(); err == nil || !strings.Contains(err.Error(), "must be an IANA time zone such as Europe/Berlin") {
			t.Errorf("zone %q: %v", name, err)
		}
	}
}

func zoneOffset(t int64, loc *time.Location) int {
	_, off := time.Unix(t, 0).In(loc).Zone()
	return off
}

// Go's zone data ends a zone's rule span at the start of a leap year's
// last UTC day (go.dev/issue/81583), which had walk loop forever from
// then on to months after; periods there are those the local clock shows.
func TestCalendarLeapYearLastDay(t *testing.T) {
	full := goZones(t)
	for _, zone := range []string{"Europe/Berlin", "America/New_York", "Australia/Sydney", "America/Santiago"} {
		loc, err := time.LoadLocationFromTZData(zone, full[zone])
		if err != nil {
			t.Fatal(err)
		}
		for _, at := range []string{"2028-12-30T23:30:00Z", "2028-12-31T00:00:00Z", "2028-12-31T12:00:00Z", "2028-12-31T23:59:59Z", "2029-01-10T12:00:00Z", "2029-03-01T00:00:00Z"} {
			v, _ := time.Parse(time.RFC3339, at)
			for _, u := range []CalendarUnit{Hour, Day, Week, Month} {
				c := Calendar{Unit: u, WeekStart: time.Monday, Zone: zone}
				if u != Week {
					c.WeekStart = 0
				}
				if got, want := c.walk(v.Unix(), loc), scanBounds(c, loc, v.Unix()); got != want {
					t.Errorf("%v %s at %s: %v, want %v", u, zone, at, got, want)
				}
			}
		}
	}
}

// Building a zone, as a configuration naming it does once: from the
// table, and from the zone's whole TZif file as time.LoadLocation does
// after finding it in the embedded database (not counted here).
func BenchmarkLoadZone(b *testing.B) {
	root, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		b.Fatal(err)
	}
	z, err := zip.OpenReader(filepath.Join(strings.TrimSpace(string(root)), "lib", "time", "zoneinfo.zip"))
	if err != nil {
		b.Fatal(err)
	}
	defer z.Close()
	for _, name := range []string{"Europe/Berlin", "Africa/Casablanca"} {
		f, err := z.Open(name)
		if err != nil {
			b.Fatal(err)
		}
		data, _ := io.ReadAll(f)
		f.Close()
		b.Run(name+"/table", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := loadZone(name); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/tzif", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := time.LoadLocationFromTZData(name, data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
