#!/usr/bin/env bash
# Two replicas, offline edits on each, a conflict, and a sync by file.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
swift build -c release --product peerd >/dev/null
peerd="$(swift build -c release --show-bin-path)/peerd"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ peerd %s\n' "$*"; "$peerd" "$@"; }

say "Two devices, each with its own replica"
run init --data "$work/tablet"
run init --data "$work/phone"

say "Offline edits on the tablet"
bolts=$("$peerd" item create Bolts 5 --data "$work/tablet"); echo "created Bolts: $bolts"
nuts=$("$peerd" item create Nuts 40 --data "$work/tablet"); echo "created Nuts: $nuts"
run item qty "$bolts" 8 --data "$work/tablet"

say "A USB stick carries the tablet's events to the phone"
run export "$work/usb-tablet.ndjson" --data "$work/tablet"
run import "$work/usb-tablet.ndjson" --data "$work/phone"

say "Both sides edit while apart: the phone renames Bolts, the tablet deletes it; the phone adds Washers"
run item rename "$bolts" "Hex bolts" --data "$work/phone"
run item delete "$bolts" --data "$work/tablet"
"$peerd" item create Washers 100 --data "$work/phone" >/dev/null
run item note "$nuts" "aisle 4" --data "$work/tablet"

say "Sync by file, both ways (import is idempotent: whole logs are fine)"
run export "$work/usb-tablet.ndjson" --data "$work/tablet"
run export "$work/usb-phone.ndjson" --data "$work/phone"
run import "$work/usb-phone.ndjson" --data "$work/tablet"
run import "$work/usb-tablet.ndjson" --data "$work/phone"

say "Deletion wins on both sides"
run items --data "$work/tablet"
run items --data "$work/phone"

say "State hashes side by side"
printf 'tablet  %s\n' "$("$peerd" status --json --data "$work/tablet" | sed 's/.*"state_hash":"\([0-9a-f]*\)".*/\1/')"
printf 'phone   %s\n' "$("$peerd" status --json --data "$work/phone" | sed 's/.*"state_hash":"\([0-9a-f]*\)".*/\1/')"
