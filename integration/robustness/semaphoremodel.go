package robustness

import (
	"fmt"

	"github.com/anishathalye/porcupine"
)

// MaxSemaphore is the largest semaphore SemaphoreModel can check.
const MaxSemaphore = 8

// semState holds the tokens of the leases held, ascending, 0 for free
// slots at the end.
type semState [MaxSemaphore]int64

// SemaphoreModel is a semaphore of max leases (at most MaxSemaphore): an
// acquire is granted only while fewer than max leases are held, and each
// holding ends by a release or a loss its holder was told of, as in
// LockModel. Histories come from LockOperations; writes are not part of it
// (several holders may write) and are ignored.
func SemaphoreModel(max int) porcupine.Model {
	return porcupine.Model{
		Init: func() any { return semState{} },
		Step: func(state, input, output any) (bool, any) {
			s := state.(semState)
			in := input.(LockOp)
			n := 0
			for n < len(s) && s[n] != 0 {
				n++
			}
			switch in.Kind {
			case "acquire":
				if n >= max || n >= len(s) {
					return false, s
				}
				for i := range n {
					if s[i] == in.Token {
						return false, s
					}
				}
				// insert in order
				i := n
				for i > 0 && s[i-1] > in.Token {
					s[i] = s[i-1]
					i--
				}
				s[i] = in.Token
				return true, s
			case "end":
				for i := range n {
					if s[i] == in.Token {
						copy(s[i:], s[i+1:])
						s[len(s)-1] = 0
						return true, s
					}
				}
				return false, s
			case "write":
				return true, s
			}
			return false, s
		},
		DescribeOperation: func(input, output any) string {
			in := input.(LockOp)
			return fmt.Sprintf("%s(%d)", in.Kind, in.Token)
		},
		DescribeState: func(state any) string {
			return fmt.Sprint(state.(semState))
		},
	}
}
