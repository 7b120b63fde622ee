#!/usr/bin/env bash
# Installs what building and testing need on a fresh Debian machine (docker.io,
# docker-compose and debootstrap for the Docker cluster), and starts what the kernel
# tests need (bpffs). dockerd is started by the scripts that use it (scripts/docker-env.sh). Safe to run again: it only
# installs what is missing.
set -euo pipefail

DEBS=(clang llvm libbpf-dev bpftool libelf-dev zlib1g-dev libmnl-dev pkg-config make gcc
      iproute2 ethtool iperf3 procps openssl
      maven openjdk-17-jdk-headless
      python3 python3-pip
      chromium chromium-driver
      docker.io docker-compose debootstrap iptables)

missing=()
for p in "${DEBS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
	echo "install-deps: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Python packages of bench/ (plotting, tests) for the python3 on PATH.
pip_install() {
	python3 -m pip install -q "$@" 2>/dev/null || python3 -m pip install -q --break-system-packages "$@"
}
python3 -c 'import pytest' 2>/dev/null || pip_install pytest
if [ -f "$(dirname "$0")/../bench/requirements.txt" ]; then
	pip_install -r "$(dirname "$0")/../bench/requirements.txt"
fi

# bpffs for pinning the data path.
if ! mountpoint -q /sys/fs/bpf; then
	mount -t bpf bpf /sys/fs/bpf
fi
