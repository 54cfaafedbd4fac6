package launcher

import (
	"strings"
	"testing"
)

func lookupIn(vars map[string]string) Lookup {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

func TestFromEnvSources(t *testing.T) {
	for _, tc := range []struct {
		name string
		vars map[string]string
		want Env
	}{
		{"torchrun", map[string]string{"RANK": "2", "WORLD_SIZE": "4", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "node7", "MASTER_PORT": "1234"},
			Env{Rank: 2, Size: 4, LocalRank: 0, LocalSize: 2, Source: "torchrun", StoreAddr: "node7:1234"}},
		{"torchcomm first", map[string]string{"TORCHCOMM_RANK": "1", "TORCHCOMM_SIZE": "3", "RANK": "0", "WORLD_SIZE": "9"},
			Env{Rank: 1, Size: 3, LocalRank: -1, LocalSize: -1, Source: "torchcomm", StoreAddr: DefaultStoreAddr}},
		{"open mpi before torchrun", map[string]string{"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_SIZE": "5", "OMPI_COMM_WORLD_LOCAL_RANK": "1", "OMPI_COMM_WORLD_LOCAL_SIZE": "2", "RANK": "0", "WORLD_SIZE": "1"},
			Env{Rank: 3, Size: 5, LocalRank: 1, LocalSize: 2, Source: "mpi", StoreAddr: DefaultStoreAddr}},
		{"pmi", map[string]string{"PMI_RANK": "0", "PMI_SIZE": "2"},
			Env{Rank: 0, Size: 2, LocalRank: -1, LocalSize: -1, Source: "pmi", StoreAddr: DefaultStoreAddr}},
		{"pals takes its size from wherever it is", map[string]string{"PALS_RANKID": "4", "WORLD_SIZE": "8"},
			Env{Rank: 4, Size: 8, LocalRank: -1, LocalSize: -1, Source: "pals", StoreAddr: DefaultStoreAddr}},
		{"slurm", map[string]string{"SLURM_PROCID": "6", "SLURM_NTASKS": "7", "SLURM_LOCALID": "2"},
			Env{Rank: 6, Size: 7, LocalRank: 2, LocalSize: -1, Source: "slurm", StoreAddr: DefaultStoreAddr}},
		{"torchrun inside an srun allocation", map[string]string{"SLURM_PROCID": "1", "SLURM_NTASKS": "2", "RANK": "5", "WORLD_SIZE": "8"},
			Env{Rank: 5, Size: 8, LocalRank: -1, LocalSize: -1, Source: "torchrun", StoreAddr: DefaultStoreAddr}},
		{"method picks slurm", map[string]string{MethodVar: "slurm", "SLURM_PROCID": "1", "SLURM_NTASKS": "2", "RANK": "5", "WORLD_SIZE": "8"},
			Env{Rank: 1, Size: 2, LocalRank: -1, LocalSize: -1, Source: "slurm", StoreAddr: DefaultStoreAddr}},
		{"agent store", map[string]string{"RANK": "0", "WORLD_SIZE": "1", "MASTER_PORT": "29501", "TORCHELASTIC_USE_AGENT_STORE": "True"},
			Env{Rank: 0, Size: 1, LocalRank: -1, LocalSize: -1, Source: "torchrun", StoreAddr: "127.0.0.1:29501", AgentStore: true}},
		{"ipv6 master", map[string]string{"RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "::1"},
			Env{Rank: 0, Size: 1, LocalRank: -1, LocalSize: -1, Source: "torchrun", StoreAddr: "[::1]:29500"}},
		{"bracketed ipv6 master", map[string]string{"RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "[fd00::7]", "MASTER_PORT": "1234"},
			Env{Rank: 0, Size: 1, LocalRank: -1, LocalSize: -1, Source: "torchrun", StoreAddr: "[fd00::7]:1234"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := FromEnv(lookupIn(tc.vars))
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestFromEnvErrorsNameTheVariable(t *testing.T) {
	for _, tc := range []struct {
		vars map[string]string
		want string
	}{
		{map[string]string{}, "no rank in the environment"},
		{map[string]string{"RANK": "x", "WORLD_SIZE": "2"}, `RANK="x"`},
		{map[string]string{"RANK": "1"}, "RANK is set but WORLD_SIZE is not"},
		{map[string]string{"RANK": "2", "WORLD_SIZE": "2"}, "RANK=2 is out of range for WORLD_SIZE=2"},
		{map[string]string{"RANK": "0", "WORLD_SIZE": "0"}, "WORLD_SIZE=0"},
		{map[string]string{"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "-1"}, "LOCAL_RANK=-1"},
		{map[string]string{"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "2", "LOCAL_WORLD_SIZE": "2"}, "LOCAL_RANK=2"},
		{map[string]string{"RANK": "0", "WORLD_SIZE": "2", "MASTER_PORT": "http"}, `MASTER_PORT="http"`},
		{map[string]string{"RANK": "0", "WORLD_SIZE": "2", "TORCHELASTIC_USE_AGENT_STORE": "maybe"}, "TORCHELASTIC_USE_AGENT_STORE"},
		{map[string]string{MethodVar: "lsf", "RANK": "0", "WORLD_SIZE": "2"}, MethodVar},
		{map[string]string{MethodVar: "mpi", "RANK": "0", "WORLD_SIZE": "2"}, "looked for TORCHCOMM_RANK, OMPI_COMM_WORLD_RANK, PMI_RANK"},
	} {
		_, err := FromEnv(lookupIn(tc.vars))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("FromEnv(%v) = %v, want an error containing %q", tc.vars, err, tc.want)
		}
	}
}
