"""What the "Streaming jobs" view shows of each job, decided from observed facts (pure)."""
