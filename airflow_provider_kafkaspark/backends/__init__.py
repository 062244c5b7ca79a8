"""Deployment backends: one per cluster manager, each turning a job reference into status,
stop and kill calls in that manager's own terms."""
