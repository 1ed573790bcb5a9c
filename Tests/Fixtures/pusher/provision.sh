#!/usr/bin/env bash
# Installs the independent Pusher peers into a git-ignored venv at <repo>/.peers/pusher-venv:
# pysher (a Python Pusher client) and the official `pusher` server SDK (its authenticate() is the oracle).
# Idempotent: a venv that already imports the packages is left alone.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
venv="${PUSHER_PEER_VENV:-$repo_root/.peers/pusher-venv}"
python="${PYTHON:-python3}"

if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import pysher, pusher' 2>/dev/null; then
    echo "pusher peers ready: $venv"
    exit 0
fi

mkdir -p "$(dirname "$venv")"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check 'pysher==1.0.8' 'pusher==3.3.4'
"$venv/bin/python" -c 'from importlib.metadata import version as v; print("pysher", v("pysher"), "pusher", v("pusher"), "websocket-client", v("websocket-client"))'
echo "pusher peers ready: $venv"
