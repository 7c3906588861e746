package format

import (
	"errors"
	"fmt"
	"io"
	"math"
	"testing"
	"time"
)

type unit uint8

func (u unit) String() string { return "unit" }

// Each case prints as fmt prints it, byte for byte.
func TestSprintfAsFmt(t *testing.T) {
	err := errors.New("boom")
	for _, c := range []struct {
		format string
		args   []any
	}{
		{"plain", nil},
		{"100%% of %s", []any{"it"}},
		{"%s and %q", []any{"a\"b", "tab\there\x00é"}},
		{"%d %d %d %d %d", []any{0, -1, math.MinInt64, uint64(math.MaxUint64), int8(-128)}},
		{"%d %d %d %d %d %d", []any{int16(7), int32(-7), uint(7), uint8(255), uint16(7), uint32(7)}},
		{"%v %v %v", []any{42, int64(-42), uintptr(9)}},
		{"%v %v %v %v %v", []any{1.5, 1e21, 1e-7, float32(0.1), math.Inf(-1)}},
		{"%t %v", []any{true, false}},
		{"%v %s %q", []any{err, err, err}},
		{"%v %s %q %d", []any{time.Second, 1500 * time.Millisecond, unit(3), uint8(unit(3))}},
		{"%q %q %q", []any{byte('a'), byte(0), byte('\'')}},
		{"%q %s", []any{[]byte("x\ny"), []byte("raw")}},
		{"%v %d", []any{[]int64{1, -2, 3}, []int64{}}},
		{"%v", []any{nil}},
		{"%s %q %d %w", []any{error(nil), error(nil), nil, nil}},
		{"%v %v %v", []any{math.Inf(1), math.NaN(), 1e6}},
		{"trailing %", nil},
	} {
		if got, want := Sprintf(c.format, c.args...), fmt.Sprintf(c.format, c.args...); got != want {
			t.Errorf("Sprintf(%q): %q, fmt gives %q", c.format, got, want)
		}
	}
}

// An argument fmt would read through reflect prints as a bad verb.
func TestSprintfUnknownType(t *testing.T) {
	type named int
	if got := Sprintf("%d and %s", named(1), 2); got != "%!d(?) and %!s(?)" {
		t.Errorf("got %q", got)
	}
	if got := Sprintf("%d %d", 1); got != "1 %!d(MISSING)" {
		t.Errorf("got %q", got)
	}
}

func TestErrorfWraps(t *testing.T) {
	err := Errorf("rules[1]: %w at %d", io.ErrUnexpectedEOF, 3)
	if want := fmt.Errorf("rules[1]: %w at %d", io.ErrUnexpectedEOF, 3).Error(); err.Error() != want {
		t.Errorf("%q, fmt gives %q", err, want)
	}
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Error("errors.Is does not find the wrapped error")
	}
	var pe *time.ParseError
	inner := &time.ParseError{Message: "bad"}
	if !errors.As(Errorf("x: %w", inner), &pe) || pe != inner {
		t.Error("errors.As does not find the wrapped error")
	}
	two := Errorf("%w; %w", io.EOF, io.ErrClosedPipe)
	if !errors.Is(two, io.EOF) || !errors.Is(two, io.ErrClosedPipe) || two.Error() != "EOF; io: read/write on closed pipe" {
		t.Errorf("two wrapped: %q", two)
	}
	var none error
	if got, want := Errorf("x: %w", none).Error(), fmt.Errorf("x: %w", none).Error(); got != want {
		t.Errorf("a nil %%w: %q, fmt gives %q", got, want)
	}
	plain := Errorf("no %s", "wrap")
	if errors.Unwrap(plain) != nil || plain.Error() != "no wrap" {
		t.Errorf("plain: %q", plain)
	}
}
