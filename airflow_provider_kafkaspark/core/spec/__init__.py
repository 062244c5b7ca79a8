"""What a user hands in: the job spec, the job's code, operator arguments and values handed
between tasks."""
