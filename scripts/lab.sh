#!/usr/bin/env bash
# Installs what is missing, builds peerd, peerd-lab and peerd-lab-link (debug:
# a debug peerd has the lab's test option --clock-offset-ms, docs/lab.md) and
# runs peerd-lab as root with the arguments given, e.g.
#   scripts/lab.sh --nodes 5 --duration 60s --seed 11
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
for product in peerd peerd-lab peerd-lab-link; do
    swift build --product "$product" >/dev/null
done
lab="$(swift build --show-bin-path)/peerd-lab"
[ "$(id -u)" -eq 0 ] || exec sudo "$lab" "$@"
exec "$lab" "$@"
