#!/usr/bin/env bash
# Installs peerd-lab beside an installed peerd: peerd-lab and peerd-lab-link
# into PREFIX/bin, netlab.sh into PREFIX/share/peersync/ (docs/lab.md,
# "Installing"). PREFIX defaults to /usr/local; BIN_DIR (default: this build's
# debug products) says where the built executables are.
#   scripts/install-lab.sh [PREFIX]
set -euo pipefail
cd "$(dirname "$0")/.."
prefix="${1:-/usr/local}"
bin="${BIN_DIR:-$(swift build --show-bin-path)}"
for program in peerd-lab peerd-lab-link; do
    [ -x "$bin/$program" ] || { echo "install-lab: no $bin/$program: swift build --product $program" >&2; exit 1; }
done
install -d "$prefix/bin" "$prefix/share/peersync"
install -m 0755 "$bin/peerd-lab" "$bin/peerd-lab-link" "$prefix/bin/"
install -m 0755 Sources/NetworkLab/netlab.sh "$prefix/share/peersync/netlab.sh"
echo "installed $prefix/bin/peerd-lab, $prefix/bin/peerd-lab-link, $prefix/share/peersync/netlab.sh"
[ -x "$prefix/bin/peerd" ] || command -v peerd >/dev/null || echo "install-lab: no peerd in $prefix/bin or on PATH yet" >&2
