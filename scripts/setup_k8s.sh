#!/usr/bin/env bash
# Sets up the local Kubernetes cluster's parts on top of `make setup-cluster`, idempotently:
#   Debian packages  containerd, runc, the CNI plugins, iptables, debootstrap (root)
#   .cache/k8s/      Kubernetes v1.34.4 and etcd built with Go from the module proxy, and the
#                    pause and driver images as OCI archives (kafkaspark local k8s build)
set -euo pipefail
cd "$(dirname "$0")/.."

[ "$(id -u)" = 0 ] || { echo "setup-k8s: the local Kubernetes cluster needs root" >&2; exit 1; }
command -v go >/dev/null 2>&1 || {
  echo "setup-k8s: the Go toolchain is needed to build Kubernetes from its modules" >&2
  exit 1
}
missing=()
for package in containerd runc containernetworking-plugins iptables debootstrap; do
  dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup-k8s: installing ${missing[*]} from Debian"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null
fi
.venv/bin/kafkaspark local k8s build | sed 's/^/setup-k8s: /'
