package names

import "testing"

type color uint8

type signed int

func TestOf(t *testing.T) {
	table := []string{1: "red", 3: "blue"}
	for _, c := range []struct {
		got, want string
	}{
		{Of(color(1), "color", table), "red"},
		{Of(color(3), "color", table), "blue"},
		{Of(color(0), "color", table), "color(0)"}, // a gap
		{Of(color(2), "color", table), "color(2)"},
		{Of(color(255), "color", table), "color(255)"},
		{Of(signed(-1), "Version", table), "Version(-1)"},
		{Of(uint64(1<<63), "big", nil), "big(9223372036854775808)"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func TestFallbacks(t *testing.T) {
	table := []string{1: "red"}
	for _, c := range []struct {
		got, want string
	}{
		{Numbered(color(1), "color ", table), "red"},
		{Numbered(color(7), "color ", table), "color 7"},
		{Numbered(signed(-2), "color ", table), "color -2"},
		{Else(color(1), table, "unknown"), "red"},
		{Else(color(0), table, "unknown"), "unknown"},
		{Else(signed(-1), table, "unknown"), "unknown"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
