"""The checkpoint and what is made of it: reading it, savepoints, restores, and which Spark may
continue it."""
