package calls

import (
	"strconv"
	"strings"
)

// Describe writes the call of operation name with reduction reduce (""
// for none), root (negative for none) and data, its dtype with what is
// known of its counts ("4 float32", "float32, counts [1 2]").
func Describe(name, reduce string, root int, data string) string {
	args := make([]string, 0, 3)
	if reduce != "" {
		args = append(args, reduce)
	}
	if root >= 0 {
		args = append(args, "root "+strconv.Itoa(root))
	}
	args = append(args, data)
	return name + "(" + strings.Join(args, ", ") + ")"
}
