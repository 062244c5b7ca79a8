"""A local Kubernetes cluster for tests and demos: binaries built from the Go module proxy
(build.py), images written as OCI archives without a registry (image.py), and the control
plane, containerd and a kubelet on a bridge of their own (cluster.py)."""
