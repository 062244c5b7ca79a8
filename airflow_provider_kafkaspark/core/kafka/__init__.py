"""Kafka clients (admin, bootstrap probe), the offsets algebra, and reconciling a checkpoint's
offsets against Kafka."""
