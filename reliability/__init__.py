"""The reliability suite: fault injection against the real local stack, with counts.

`python -m reliability.run --profile short|long` (or `make chaos` for the long profile) runs
the scenarios in `reliability.scenarios`, writes their figures as JSON under
`benchmarks/results/` and renders `docs/reliability.md` from that JSON.
"""
