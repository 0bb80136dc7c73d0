#!/usr/bin/env bash
# Three replicas of one cluster: offline edits on each side, a conflict, then
# live sync over encrypted TCP with `peerd run`, and the state hashes side by side.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
swift build -c release --product peerd >/dev/null
peerd="$(swift build -c release --show-bin-path)/peerd"

work=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ peerd %s\n' "$*"; "$peerd" "$@"; }
hash_of() { "$peerd" status --json --data "$work/$1" | sed 's/.*"state_hash":"\([0-9a-f]*\)".*/\1/'; }

# Starts `peerd run` for a device in the background; prints its port.
start() {
    local name=$1
    shift
    "$peerd" run --data "$work/$name" --listen 127.0.0.1:0 --no-mdns "$@" >"$work/$name.out" 2>"$work/$name.log" &
    pids+=($!)
    for _ in $(seq 100); do
        grep -q "listening on" "$work/$name.out" 2>/dev/null && break
        sleep 0.05
    done
    sed -n 's/listening on 127.0.0.1:\([0-9]*\)/\1/p' "$work/$name.out"
}

# Waits (up to 10 s) until every named device reports the same state hash.
converge() {
    local started=$SECONDS
    while ((SECONDS - started < 10)); do
        local hashes
        hashes=$(for name in "$@"; do hash_of "$name"; done | sort -u | wc -l)
        ((hashes == 1)) && return 0
        sleep 0.1
    done
    echo "not converged after 10 s" >&2
    return 1
}

say "A tablet starts a cluster; a phone joins it with the share code"
run init --data "$work/tablet"
code=$("$peerd" cluster-code --data "$work/tablet")
run init --join "$code" --data "$work/phone"

say "Offline edits on the tablet, then on the phone: the phone renames Bolts, the tablet deletes it"
bolts=$("$peerd" item create Bolts 5 --data "$work/tablet"); echo "tablet created Bolts: $bolts"
nuts=$("$peerd" item create Nuts 40 --data "$work/tablet"); echo "tablet created Nuts: $nuts"
run export "$work/usb.ndjson" --data "$work/tablet" && run import "$work/usb.ndjson" --data "$work/phone"
run item rename "$bolts" "Hex bolts" --data "$work/phone"
run item delete "$bolts" --data "$work/tablet"
"$peerd" item create Washers 100 --data "$work/phone" >/dev/null && echo "phone created Washers"

say "Both run the daemon; the phone dials the tablet"
tablet_port=$(start tablet)
echo "tablet listening on 127.0.0.1:$tablet_port"
start phone --peer "127.0.0.1:$tablet_port" >/dev/null
converge tablet phone
run items --data "$work/tablet"
run items --data "$work/phone"

say "While the daemons run, an edit on the phone reaches the tablet at once"
run item note "$nuts" "aisle 4" --data "$work/phone"
converge tablet phone
run items --data "$work/tablet"

say "A gateway joins late, knows only the phone, and catches up through it"
run init --join "$code" --data "$work/gateway"
phone_port=$(sed -n 's/listening on 127.0.0.1:\([0-9]*\)/\1/p' "$work/phone.out")
start gateway --peer "127.0.0.1:$phone_port" >/dev/null
converge tablet phone gateway
run items --data "$work/gateway"

say "The tablet's daemon log"
cat "$work/tablet.log"

say "State hashes side by side"
for name in tablet phone gateway; do printf '%-8s %s\n' "$name" "$(hash_of "$name")"; done
