package gocomms

import (
	"maps"
	"slices"
	"strings"

	"github.com/gocomms/gocomms/algorithms"
	"github.com/gocomms/gocomms/commerr"
)

// WithAlgorithm makes the communicator run a collective with the named
// schedule (algorithms.Algorithms lists them) where an operation's
// HintAlgorithm names none. op is the collective, OpAllReduce for
// instance; its single and vector forms share its schedule. It takes
// precedence over GOCOMMS_ALGO_<OP> and over a communicator-wide
// HintAlgorithm.
func WithAlgorithm(op OpName, name string) Option {
	return func(o *options) {
		if o.algorithms == nil {
			o.algorithms = map[OpName]string{}
		}
		o.algorithms[op] = name
	}
}

// AlgorithmEnv is the environment variable that picks a collective's
// schedule for every communicator of the process without a WithAlgorithm
// for it: GOCOMMS_ALGO_ALLREDUCE=rabenseifner, for instance.
func AlgorithmEnv(op OpName) string {
	return "GOCOMMS_ALGO_" + strings.ToUpper(strings.ReplaceAll(string(op), "_", ""))
}

// resolveAlgorithms sets c.Algorithms from the options' choices, then from
// the environment, and rejects a name that is no schedule of its
// collective, listing those that are.
func resolveAlgorithms(c *Config, chosen map[OpName]string, lookup func(string) (string, bool)) error {
	c.Algorithms = map[algorithms.Kind]string{}
	for _, op := range slices.Sorted(maps.Keys(chosen)) {
		k, ok := algorithms.ParseKind(string(op))
		if !ok {
			return commerr.Invalid("WithAlgorithm(%q): not a collective; have %q", op, collectiveNames())
		}
		if err := checkAlgorithm(k, chosen[op], "WithAlgorithm"); err != nil {
			return err
		}
		c.Algorithms[k] = chosen[op]
	}
	for _, k := range algorithms.Kinds() {
		env := AlgorithmEnv(OpName(k.String()))
		name, ok := lookup(env)
		if _, chosen := c.Algorithms[k]; chosen || !ok {
			continue
		}
		name = strings.TrimSpace(name)
		if err := checkAlgorithm(k, name, env); err != nil {
			return err
		}
		c.Algorithms[k] = name
	}
	return nil
}

func checkAlgorithm(k algorithms.Kind, name, from string) error {
	if !slices.Contains(algorithms.Algorithms(k), name) {
		return commerr.Invalid("%s: %q is no %v algorithm; have %q", from, name, k, algorithms.Algorithms(k))
	}
	return nil
}

func collectiveNames() []string {
	var names []string
	for _, k := range algorithms.Kinds() {
		names = append(names, k.String())
	}
	return names
}
