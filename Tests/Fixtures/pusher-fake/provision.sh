#!/usr/bin/env bash
# Provisions pusher-fake (github.com/tristandunn/pusher-fake, MIT), the third-party Pusher-protocol server of
# Tests/IntegrationTests/PusherFake*.swift, into the git-ignored <repo>/.peers/pusher-fake:
#   - an installed `pusher-fake` gem is used as is (ruby finds it); only the Python SDK venv is made here;
#   - otherwise ../shared/peers/pusher-fake/setup.sh (beside the checkout) installs its Debian ruby packages
#     and writes lib/ and venv/ there.
# venv/ holds the official `pusher` server SDK (REST triggers, auth signing), pysher and PyNaCl.
# Idempotent, and quick when already provisioned. With neither source it fails loudly: no silent skip.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
dest="${REALTIME_PEERS:-$repo_root/.peers}/pusher-fake"
shared="$repo_root/../shared/peers/pusher-fake/setup.sh"

venv_ready() { [ -x "$dest/venv/bin/python" ] && "$dest/venv/bin/python" -c 'import pusher, pysher, nacl' 2>/dev/null; }
gem_ready() { command -v ruby >/dev/null 2>&1 && ruby -e 'require "pusher-fake"' >/dev/null 2>&1; }
copy_ready() { command -v ruby >/dev/null 2>&1 && [ -f "$dest/lib/pusher-fake.rb" ] \
    && ruby -I "$dest/lib" -e 'require "pusher-fake"' >/dev/null 2>&1; }
version() { ruby ${1:+-I "$1"} -e 'require "pusher-fake"; print "pusher-fake ", PusherFake::VERSION, " (", $LOADED_FEATURES.grep(/pusher-fake\.rb$/).first, "), ruby ", RUBY_VERSION'; }

# The copy and its venv must never be committed.
case "$dest" in
    "$repo_root"/*)
        if git -C "$repo_root" rev-parse --is-inside-work-tree >/dev/null 2>&1 \
            && ! git -C "$repo_root" check-ignore -q "$dest"; then
            echo "PUSHER-FAKE: $dest IS NOT GIT-IGNORED: ADD /.peers/ TO .gitignore" >&2
            exit 1
        fi
        ;;
esac

if gem_ready; then
    # The tests load a copied lib/ when one exists; an installed gem must win over an old copy.
    rm -rf "$dest/lib"
    if ! venv_ready; then
        mkdir -p "$dest"
        python3 -m venv "$dest/venv"
        "$dest/venv/bin/pip" install --quiet --disable-pip-version-check 'pusher==3.3.4' 'pysher==1.0.8' 'PyNaCl>=1.5'
    fi
    echo "pusher-fake peer ready (installed gem): $(version)"
    exit 0
fi

if copy_ready && venv_ready; then
    echo "pusher-fake peer ready: $(version "$dest/lib")"
    exit 0
fi

if [ ! -f "$shared" ]; then
    echo "PUSHER-FAKE IS MISSING: NO 'pusher-fake' GEM IS INSTALLED AND $shared DOES NOT EXIST." >&2
    echo "INSTALL THE GEM (gem install pusher-fake) OR PUT shared/peers/pusher-fake BESIDE THE CHECKOUT." >&2
    echo "THE PUSHER-FAKE INTEGRATION TESTS CANNOT RUN." >&2
    exit 1
fi

bash "$shared" "$dest"
if ! copy_ready || ! venv_ready; then
    echo "PUSHER-FAKE PROVISIONING FAILED: $shared RAN BUT RUBY CANNOT LOAD $dest/lib OR THE VENV LACKS pusher/pysher/PyNaCl." >&2
    exit 1
fi
echo "pusher-fake peer ready: $(version "$dest/lib")"
