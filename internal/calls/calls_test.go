package calls

import "testing"

func TestDescribe(t *testing.T) {
	for _, tc := range []struct {
		name, reduce string
		root         int
		data, want   string
	}{
		{"all_reduce", "sum", -1, "4 float32", "all_reduce(sum, 4 float32)"},
		{"broadcast", "", 0, "4 float32", "broadcast(root 0, 4 float32)"},
		{"reduce", "max", 3, "float64", "reduce(max, root 3, float64)"},
		{"all_gather_v", "", -1, "float32, counts [1 2]", "all_gather_v(float32, counts [1 2])"},
	} {
		if got := Describe(tc.name, tc.reduce, tc.root, tc.data); got != tc.want {
			t.Errorf("Describe(%q, %q, %d, %q) = %q, want %q", tc.name, tc.reduce, tc.root, tc.data, got, tc.want)
		}
	}
}
