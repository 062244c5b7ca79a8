"""The control folder `_kafkaspark/` of a checkpoint: the lease, the requests written to a
driver, the reports it writes back, and how a stopping driver stops."""
