#!/usr/bin/env bash
# Installs the Rails Action Cable peer from Debian packages: Ruby, actioncable and puma. No gems, no Redis.
# Idempotent and quick when everything is already there (it only checks that Ruby can load the libraries).
set -euo pipefail

ready() {
    command -v ruby >/dev/null 2>&1 && command -v puma >/dev/null 2>&1 \
        && ruby -e 'require "action_cable"; require "puma"' >/dev/null 2>&1
}

if ready; then
    echo "actioncable peer ready: $(ruby -e 'require "action_cable"; require "puma/const"; print "actioncable ", ActionCable.version, ", puma ", Puma::Const::PUMA_VERSION, ", ruby ", RUBY_VERSION')"
    exit 0
fi

if [ "$(id -u)" != 0 ]; then
    echo "actioncable peer missing and not root: run 'apt-get install --no-install-recommends -y ruby-actioncable puma'" >&2
    exit 1
fi

export DEBIAN_FRONTEND=noninteractive
# Try with the current package lists first; refresh them only when that fails.
if ! apt-get install --no-install-recommends -y -qq ruby-actioncable puma >/dev/null 2>&1; then
    apt-get update -qq
    apt-get install --no-install-recommends -y -qq ruby-actioncable puma >/dev/null
fi

if ! ready; then
    echo "actioncable peer: packages installed but Ruby cannot load action_cable and puma" >&2
    exit 1
fi
echo "actioncable peer ready: $(ruby -e 'require "action_cable"; require "puma/const"; print "actioncable ", ActionCable.version, ", puma ", Puma::Const::PUMA_VERSION, ", ruby ", RUBY_VERSION')"
