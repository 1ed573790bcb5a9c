#!/usr/bin/env bash
# Installs the python-socketio peer into a git-ignored venv at <repo>/.peers/socketio-venv.
# Idempotent: a venv that already imports the packages is left alone.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
venv="${SOCKETIO_PEER_VENV:-$repo_root/.peers/socketio-venv}"
python="${PYTHON:-python3}"

if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import socketio, aiohttp' 2>/dev/null; then
    echo "socketio peer ready: $venv"
    exit 0
fi

mkdir -p "$(dirname "$venv")"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    'python-socketio>=5.11,<6' 'python-engineio>=4.9,<5' 'aiohttp>=3.9,<4'
"$venv/bin/python" -c 'from importlib.metadata import version as v; print("python-socketio", v("python-socketio"), "python-engineio", v("python-engineio"), "aiohttp", v("aiohttp"))'
echo "socketio peer ready: $venv"
