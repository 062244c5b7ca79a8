"""Where a driver runs: its job reference, its host process, its restart budget, and a YARN
ResourceManager's REST API."""
