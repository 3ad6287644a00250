package lb

// descriptorLimit: Windows has no descriptor limit to read (defaultMaxConns falls back).
func descriptorLimit() (uint64, bool) { return 0, false }
