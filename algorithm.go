package gocomms

import (
	"maps"
	"slices"
	"strings"

	"github.com/gocomms/gocomms/algorithms"
	"github.com/gocomms/gocomms/commerr"
)

// defaultRegistry holds the schedules of every communicator without
// WithAlgorithms.
var defaultRegistry = algorithms.NewRegistry()

// RegisterAlgorithm adds a schedule of kind under name to the process's
// registry, which every communicator without WithAlgorithms runs from:
// WithAlgorithm, GOCOMMS_ALGO_<OP> and HintAlgorithm can name it then.
// Every rank of a job must register the same schedules. It fails as
// algorithms.Registry.Register does, which refuses a schedule its checker
// refuses, with the checker's reason.
func RegisterAlgorithm(kind algorithms.Kind, name string, gen algorithms.Generator) error {
	return defaultRegistry.Register(kind, name, gen)
}

// Algorithms returns the names of the schedules of kind in the process's
// registry, default first.
func Algorithms(kind algorithms.Kind) []string { return defaultRegistry.Algorithms(kind) }

// WithAlgorithms makes the communicator run the schedules of r instead of
// the process's registry; nil means the process's. Every rank must give a
// registry holding the same schedules.
func WithAlgorithms(r *algorithms.Registry) Option {
	return func(o *options) { o.cfg.Registry = r }
}

// WithAlgorithm makes the communicator run a collective with the named
// schedule, one of its registry's (Algorithms lists the process's), where
// an operation's HintAlgorithm names none. op is the collective,
// OpAllReduce for instance; its single and vector forms share its
// schedule. It takes precedence over GOCOMMS_ALGO_<OP> and over a
// communicator-wide HintAlgorithm.
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

// resolveAlgorithms sets c.Registry, the process's unless WithAlgorithms
// gave one, and c.Algorithms from the options' choices, then from the
// environment, and rejects a name that is no schedule of its collective
// in c.Registry, listing those that are.
func resolveAlgorithms(c *Config, chosen map[OpName]string, lookup func(string) (string, bool)) error {
	if c.Registry == nil {
		c.Registry = defaultRegistry
	}
	c.Algorithms = map[algorithms.Kind]string{}
	for _, op := range slices.Sorted(maps.Keys(chosen)) {
		k, ok := algorithms.ParseKind(string(op))
		if !ok {
			return commerr.Invalid("WithAlgorithm(%q): not a collective; have %q", op, collectiveNames())
		}
		if err := checkAlgorithm(c.Registry, k, chosen[op], "WithAlgorithm"); err != nil {
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
		if err := checkAlgorithm(c.Registry, k, name, env); err != nil {
			return err
		}
		c.Algorithms[k] = name
	}
	return nil
}

func checkAlgorithm(r *algorithms.Registry, k algorithms.Kind, name, from string) error {
	if have := r.Algorithms(k); !slices.Contains(have, name) {
		return commerr.Invalid("%s: %q is no %v algorithm; have %q", from, name, k, have)
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
