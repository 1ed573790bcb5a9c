#!/usr/bin/env bash
# Installs tinyproxy, the HTTP CONNECT proxy of Tests/IntegrationTests/ProxyTests.swift, from Debian's
# `tinyproxy-bin` (the binary alone: the `tinyproxy` package would also start a system service). The tests
# start their own tinyproxy on 127.0.0.1 with a generated configuration. Idempotent and quick when installed.
set -euo pipefail

version() { tinyproxy -v 2>&1 | head -n 1; }

if command -v tinyproxy >/dev/null 2>&1; then
    echo "proxy peer ready: $(version)"
    exit 0
fi

if [ "$(id -u)" != 0 ]; then
    echo "tinyproxy missing and not root: run 'apt-get install --no-install-recommends -y tinyproxy-bin'" >&2
    exit 1
fi

export DEBIAN_FRONTEND=noninteractive
# Try with the current package lists first; refresh them only when that fails.
if ! apt-get install --no-install-recommends -y -qq tinyproxy-bin >/dev/null 2>&1; then
    apt-get update -qq
    apt-get install --no-install-recommends -y -qq tinyproxy-bin >/dev/null
fi

if ! command -v tinyproxy >/dev/null 2>&1; then
    echo "proxy peer: tinyproxy-bin installed but no tinyproxy on PATH" >&2
    exit 1
fi
echo "proxy peer ready: $(version)"
