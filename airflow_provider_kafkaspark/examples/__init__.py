"""Example jobs and their input generators, used by the demo, the tests and the DAGs."""
