"""Development tools kept out of the runtime wheel (`pyproject.toml` excludes this package):
the demo behind `make demo` and the README's jar list. A source checkout (the editable install
`make setup` makes) has them; a deployment does not."""
