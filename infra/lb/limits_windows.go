package lb

// descriptorLimit: Windows has no descriptor limit to read (DefaultMaxConns falls back).
func descriptorLimit() (uint64, bool) { return 0, false }
