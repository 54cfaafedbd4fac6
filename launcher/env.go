package launcher

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Env is what the launcher told this process.
type Env struct {
	Rank, Size int
	// LocalRank and LocalSize place the rank on its host; -1 when the
	// launcher did not say.
	LocalRank, LocalSize int
	// Source names the variables rank and size came from: "torchcomm",
	// "mpi", "pmi", "pals", "torchrun" or "slurm".
	Source string
	// StoreAddr is the rendezvous store's host:port: MASTER_ADDR and
	// MASTER_PORT, or 127.0.0.1:29500 as torch defaults.
	StoreAddr string
	// AgentStore says that the launcher already hosts the store
	// (TORCHELASTIC_USE_AGENT_STORE), so rank 0 must not.
	AgentStore bool
}

// Lookup returns the value of an environment variable and whether it is
// set, as os.LookupEnv does.
type Lookup func(name string) (string, bool)

// MethodVar forces one source of rank and size.
const MethodVar = "TORCHCOMM_BOOTSTRAP_RANKSIZE_QUERY_METHOD"

// DefaultStoreAddr is where the store is when the launcher says nothing.
const DefaultStoreAddr = "127.0.0.1:29500"

// source is one way launchers publish rank and size.
type source struct {
	name           string
	method         string // the value of MethodVar that selects it
	rank           string
	sizes          []string // the first that is set gives the size
	local, locSize string
}

// sources in the order they are tried.
var sources = []source{
	{name: "torchcomm", rank: "TORCHCOMM_RANK", sizes: []string{"TORCHCOMM_SIZE"}},
	{name: "mpi", method: "mpi", rank: "OMPI_COMM_WORLD_RANK", sizes: []string{"OMPI_COMM_WORLD_SIZE"},
		local: "OMPI_COMM_WORLD_LOCAL_RANK", locSize: "OMPI_COMM_WORLD_LOCAL_SIZE"},
	{name: "pmi", method: "mpi", rank: "PMI_RANK", sizes: []string{"PMI_SIZE"}},
	{name: "pals", method: "pals", rank: "PALS_RANKID", sizes: []string{"PALS_SIZE", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "WORLD_SIZE"},
		local: "PALS_LOCAL_RANKID"},
	{name: "torchrun", method: "torchrun", rank: "RANK", sizes: []string{"WORLD_SIZE"},
		local: "LOCAL_RANK", locSize: "LOCAL_WORLD_SIZE"},
	{name: "slurm", method: "slurm", rank: "SLURM_PROCID", sizes: []string{"SLURM_NTASKS"},
		local: "SLURM_LOCALID", locSize: "SLURM_NTASKS_PER_NODE"},
}

// FromEnv reads the launcher's variables. An inconsistent or malformed
// value is an error that names the variable; no rank at all is an error
// that lists what was looked for.
func FromEnv(lookup Lookup) (Env, error) {
	method, _ := lookup(MethodVar)
	method = strings.ToLower(strings.TrimSpace(method))
	switch method {
	case "":
		method = "auto"
	case "auto", "torchrun", "mpi", "pals", "slurm":
	default:
		return Env{}, fmt.Errorf("bootstrap: %s=%q: want auto, torchrun, mpi, pals or slurm", MethodVar, method)
	}
	var tried []string
	for _, src := range sources {
		// TORCHCOMM_RANK counts whatever the method, as in torchcomms.
		if method != "auto" && src.method != "" && src.method != method {
			continue
		}
		tried = append(tried, src.rank)
		if _, ok := lookup(src.rank); !ok {
			continue
		}
		e, err := src.read(lookup)
		if err != nil {
			return Env{}, err
		}
		return e.withStore(lookup)
	}
	return Env{}, fmt.Errorf("bootstrap: no rank in the environment (looked for %s); start under a launcher (commnode launch, torchrun, mpirun, srun) or set TORCHCOMM_RANK and TORCHCOMM_SIZE", strings.Join(tried, ", "))
}

func (src source) read(lookup Lookup) (Env, error) {
	e := Env{Source: src.name, LocalRank: -1, LocalSize: -1}
	var err error
	if e.Rank, err = intVar(lookup, src.rank); err != nil {
		return Env{}, err
	}
	sizeVar := ""
	for _, v := range src.sizes {
		if _, ok := lookup(v); ok {
			sizeVar = v
			break
		}
	}
	if sizeVar == "" {
		return Env{}, fmt.Errorf("bootstrap: %s is set but %s is not", src.rank, strings.Join(src.sizes, " or "))
	}
	if e.Size, err = intVar(lookup, sizeVar); err != nil {
		return Env{}, err
	}
	if e.Size < 1 {
		return Env{}, fmt.Errorf("bootstrap: %s=%d: the job needs at least one rank", sizeVar, e.Size)
	}
	if e.Rank < 0 || e.Rank >= e.Size {
		return Env{}, fmt.Errorf("bootstrap: %s=%d is out of range for %s=%d", src.rank, e.Rank, sizeVar, e.Size)
	}
	if e.LocalRank, err = optionalIntVar(lookup, src.local); err != nil {
		return Env{}, err
	}
	if e.LocalSize, err = optionalIntVar(lookup, src.locSize); err != nil {
		return Env{}, err
	}
	if e.LocalSize >= 0 && e.LocalRank >= e.LocalSize {
		return Env{}, fmt.Errorf("bootstrap: %s=%d is out of range for %s=%d", src.local, e.LocalRank, src.locSize, e.LocalSize)
	}
	return e, nil
}

// withStore adds the store's address.
func (e Env) withStore(lookup Lookup) (Env, error) {
	var err error
	e.StoreAddr, e.AgentStore, err = StoreFromEnv(lookup)
	return e, err
}

// StoreFromEnv returns the store's address from MASTER_ADDR and
// MASTER_PORT (DefaultStoreAddr fills in what is missing), and whether a
// launcher hosts it (TORCHELASTIC_USE_AGENT_STORE).
func StoreFromEnv(lookup Lookup) (addr string, agent bool, err error) {
	host, port, _ := net.SplitHostPort(DefaultStoreAddr)
	if v, ok := lookup("MASTER_ADDR"); ok && v != "" {
		host = v
		if h, ok := strings.CutPrefix(v, "["); ok && strings.HasSuffix(h, "]") {
			host = strings.TrimSuffix(h, "]") // "[::1]": JoinHostPort brackets it again
		}
	}
	if v, ok := lookup("MASTER_PORT"); ok {
		p, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || p <= 0 || p > 65535 {
			return "", false, fmt.Errorf("bootstrap: MASTER_PORT=%q is not a port number", v)
		}
		port = strconv.Itoa(p)
	}
	if v, ok := lookup("TORCHELASTIC_USE_AGENT_STORE"); ok {
		if agent, err = strconv.ParseBool(v); err != nil {
			return "", false, fmt.Errorf("bootstrap: TORCHELASTIC_USE_AGENT_STORE=%q is not a boolean", v)
		}
	}
	return net.JoinHostPort(host, port), agent, nil
}

func intVar(lookup Lookup, name string) (int, error) {
	v, _ := lookup(name)
	i, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return 0, fmt.Errorf("bootstrap: %s=%q is not an integer", name, v)
	}
	return i, nil
}

func optionalIntVar(lookup Lookup, name string) (int, error) {
	if name == "" {
		return -1, nil
	}
	if _, ok := lookup(name); !ok {
		return -1, nil
	}
	i, err := intVar(lookup, name)
	if err == nil && i < 0 {
		err = fmt.Errorf("bootstrap: %s=%d is negative", name, i)
	}
	return i, err
}
