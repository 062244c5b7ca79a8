"""Locations over fsspec, the conditional writes of the lease, and private local files."""
