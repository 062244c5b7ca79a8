"""`kafkaspark local ...`, registered with the CLI through the `kafkaspark.cli` entry point."""
