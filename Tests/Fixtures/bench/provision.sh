#!/usr/bin/env bash
# Installs the Python clients `realtime-bench dialects` compares against into a git-ignored venv at
# <repo>/.peers/bench-venv: python-socketio's AsyncClient (with aiohttp), pysher, and websockets.
# Idempotent: a venv that already imports the packages is left alone.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
venv="${BENCH_PEER_VENV:-$repo_root/.peers/bench-venv}"
python="${PYTHON:-python3}"

if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import socketio, aiohttp, pysher, websockets' 2>/dev/null; then
    echo "bench peers ready: $venv"
    exit 0
fi

mkdir -p "$(dirname "$venv")"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    'python-socketio>=5.11,<6' 'aiohttp>=3.9,<4' 'pysher==1.0.8' 'websockets>=13,<16'
"$venv/bin/python" -c 'from importlib.metadata import version as v; print(", ".join(n + " " + v(n) for n in ("python-socketio", "aiohttp", "pysher", "websocket-client", "websockets")))'
echo "bench peers ready: $venv"
