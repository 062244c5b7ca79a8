"""Health of a running query: observe, then decide by pure rules."""
