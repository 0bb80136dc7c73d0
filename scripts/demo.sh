#!/usr/bin/env bash
# Installs what is missing, builds peerd and peerd-demo, and runs peerd-demo:
# three replicas of one cluster on this machine, offline edits on each side
# and a conflict, then live sync over encrypted TCP with `peerd run`, and the
# state hashes side by side (Sources/PeerDemo). Extra arguments go to
# peerd-demo (e.g. --no-mdns).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
swift build -c release --static-swift-stdlib --product peerd >/dev/null
swift build -c release --static-swift-stdlib --product peerd-demo >/dev/null
exec "$(swift build -c release --static-swift-stdlib --show-bin-path)/peerd-demo" "$@"
