"""Deployments: a desired job spec, its upgrade mode and policies, and the record of what runs
(`deployment.json` in the control folder)."""
