"""The clickstream team's Spark jobs. A job spec names a function here as
`clickstream.<module>:<function>`; the submit ships this folder with the job (the spec's
`python_path`), so the cluster's nodes need none of it installed."""
