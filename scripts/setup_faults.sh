#!/usr/bin/env bash
# The fault tier's tools (`make setup-faults`), idempotently: the bed's hosts are network and
# PID namespaces (ip, nsenter: iproute2, util-linux); its faults are iptables rules and tc
# netem queues inside them, and signals found with pgrep (procps). Root is needed to make
# namespaces; nothing is changed in the machine's own network namespace.
set -euo pipefail

if [ "$(id -u)" != 0 ]; then
  echo "setup-faults: the multi-host tiers make network namespaces: run as root" >&2
  exit 1
fi
missing=()
for tool in ip:iproute2 tc:iproute2 iptables:iptables nsenter:util-linux pgrep:procps; do
  command -v "${tool%%:*}" >/dev/null 2>&1 || missing+=("${tool##*:}")
done
if [ "${#missing[@]}" -gt 0 ]; then
  command -v apt-get >/dev/null 2>&1 || {
    echo "setup-faults: install ${missing[*]} with your package manager" >&2
    exit 1
  }
  echo "setup-faults: apt-get install ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q $(printf '%s\n' "${missing[@]}" | sort -u) >/dev/null
fi
echo "setup-faults: ip, tc, iptables, nsenter and pgrep present"
