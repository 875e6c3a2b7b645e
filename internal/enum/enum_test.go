package enum

import (
	"encoding/json"
	"errors"
	"flag"
	"strings"
	"testing"
)

type color uint8

const (
	red color = iota
	green
	blue
)

func (c color) String() string {
	switch c {
	case red:
		return "red"
	case green:
		return "green"
	case blue:
		return "blue"
	}
	return "color(" + string(rune('0'+c)) + ")"
}

var colors = New("color", red, green, blue)

func (c color) MarshalText() ([]byte, error)  { return colors.Marshal(c) }
func (c *color) UnmarshalText(b []byte) error { return colors.Unmarshal(c, b) }

func TestRoundTrip(t *testing.T) {
	for _, c := range colors.Values() {
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		var back color
		if err := json.Unmarshal(b, &back); err != nil || back != c {
			t.Errorf("%s: %s back as %v, %v", c, b, back, err)
		}
	}
	if got := strings.Join(colors.Names(), ","); got != "red,green,blue" {
		t.Errorf("names %s", got)
	}
}

func TestUnknown(t *testing.T) {
	c := blue
	err := json.Unmarshal([]byte(`"mauve"`), &c)
	if err == nil || !strings.Contains(err.Error(), `color "mauve" unknown: want one of red, green, blue`) {
		t.Errorf("unknown name: %v", err)
	}
	if c != blue {
		t.Errorf("value changed to %v on an error", c)
	}
	if _, err := json.Marshal(color(7)); err == nil {
		t.Error("marshalled a value with no name")
	}
	if err := c.UnmarshalText(nil); err == nil {
		t.Error(`"" parsed without EmptyIsZero`)
	}
	s := New("color", red, green).EmptyIsZero()
	if v, err := s.Parse(""); err != nil || v != red {
		t.Errorf(`"" with EmptyIsZero: %v, %v`, v, err)
	}
}

func TestWrap(t *testing.T) {
	errBad := errors.New("bad configuration")
	s := New("color", red, green).Wrap(errBad)
	_, err := s.Parse("mauve")
	if !errors.Is(err, errBad) || !strings.Contains(err.Error(), `color "mauve" unknown: want one of red, green`) {
		t.Errorf("Parse: %v", err)
	}
	if err := s.Check(blue); !errors.Is(err, errBad) {
		t.Errorf("Check: %v", err)
	}
}

// unsetColor names its zero value "": it means unset.
type unsetColor uint8

func (c unsetColor) String() string { return [...]string{"", "cyan", "magenta"}[c] }

func TestUnsetZero(t *testing.T) {
	s := New("color", 0, unsetColor(1), unsetColor(2))
	if b, err := s.Marshal(0); err != nil || string(b) != "" {
		t.Errorf("Marshal(0): %q, %v", b, err)
	}
	if v, err := s.Parse(""); err != nil || v != 0 {
		t.Errorf(`Parse(""): %v, %v`, v, err)
	}
	if _, err := s.Parse("red"); err == nil || !strings.HasSuffix(err.Error(), "want one of cyan, magenta") {
		t.Errorf("offered: %v", err)
	}
}

func TestFlag(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(new(strings.Builder))
	c := green
	fs.TextVar(&c, "color", c, "")
	if err := fs.Parse([]string{"-color", "blue"}); err != nil || c != blue {
		t.Errorf("-color blue: %v, %v", c, err)
	}
	if err := fs.Parse([]string{"-color", "mauve"}); err == nil {
		t.Error("-color mauve accepted")
	}
}

func TestDuplicatePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic")
		}
	}()
	New("color", red, red)
}
