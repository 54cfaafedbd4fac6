package spans

import (
	"strconv"
	"strings"
)

// Format writes sorted nums with sep between the parts, a run of
// consecutive numbers as "first-last": Format([]int{0, 1, 2, 5}, ",") is
// "0-2,5".
func Format(nums []int, sep string) string {
	var b strings.Builder
	for i := 0; i < len(nums); {
		j := i
		for j+1 < len(nums) && nums[j+1] == nums[j]+1 {
			j++
		}
		if i > 0 {
			b.WriteString(sep)
		}
		b.WriteString(strconv.Itoa(nums[i]))
		if j > i {
			b.WriteString("-" + strconv.Itoa(nums[j]))
		}
		i = j + 1
	}
	return b.String()
}
