"""The `kafkaspark` CLI's subcommands, one module per group; `cli.py` wires them."""
