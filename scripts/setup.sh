#!/usr/bin/env bash
# Installs what PeerSync needs on a Debian machine, when it is missing.
# The Swift toolchain itself (6.x) must already be on PATH.
set -euo pipefail

# postgresql: the shared store of relays (docs/relay.md); the tests start their own server with initdb and pg_ctl.
# chromium: the browser test opens the lab's HTML report headless (LabReportBrowserTests).
packages=(libsqlite3-dev sqlite3 pkg-config libpq-dev postgresql libsodium-dev libzstd-dev libmicrohttpd-dev curl tcpdump libavahi-client-dev avahi-daemon avahi-utils dbus iproute2 nftables chromium)

missing=()
for package in "${packages[@]}"; do
    dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
if ((${#missing[@]})); then
    echo "setup: installing ${missing[*]}" >&2
    sudo_cmd=()
    [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
    "${sudo_cmd[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi

command -v swift >/dev/null || {
    echo "setup: no swift on PATH; install the Swift 6 toolchain (e.g. to /opt/swift) and add its bin to PATH" >&2
    exit 1
}
