#!/usr/bin/env bash
# Two replicas of one cluster and a declared entity type: A declares
# `inspection` (inspection.json beside this script), takes a few events over
# HTTP and refuses one that does not fit; B, dialing A, folds the same state.
# Prints `converged` and exits 0 once B serves A's state and both report the
# same state hash; exits 1 if that takes longer than 30 s.
#
#   PEERD=.build/debug/peerd Examples/Inspections/demo.sh
#
# Needs bash, curl and python3. Everything it starts and writes is gone at the end.
set -euo pipefail

PEERD=${PEERD:-peerd}
declaration="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/inspection.json"
work=$(mktemp -d "${TMPDIR:-/tmp}/peersync-inspections.XXXXXX")
pids=()

cleanup() {
    for pid in ${pids[@]+"${pids[@]}"}; do kill "$pid" 2>/dev/null || true; done
    for pid in ${pids[@]+"${pids[@]}"}; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

fail() {
    echo "demo: $*" >&2
    for log in "$work"/*.err; do [[ -s $log ]] && { echo "--- $log" >&2; tail -n 5 "$log" >&2; }; done
    exit 1
}

# json KEY...: reads JSON on stdin and prints the value at that path
# (strings bare, anything else as compact JSON).
json() {
    python3 -c '
import json, sys
value = json.load(sys.stdin)
for key in sys.argv[1:]:
    value = value[int(key)] if isinstance(value, list) else value[key]
print(value if isinstance(value, str) else json.dumps(value, sort_keys=True, separators=(",", ":")))
' "$@"
}

# start NAME [ARGS...]: runs a daemon on DIR NAME, sets SYNC_NAME and HTTP_NAME.
start() {
    local name=$1
    shift
    "$PEERD" run --data "$work/$name" --listen 127.0.0.1:0 --http 127.0.0.1:0 --no-mdns "$@" \
        >"$work/$name.out" 2>"$work/$name.err" &
    pids+=($!)
    local tries=0
    until grep -q '^http on ' "$work/$name.out"; do
        ((++tries <= 100)) || fail "$name did not start"
        sleep 0.1
    done
    printf -v "SYNC_$name" '%s' "$(sed -n 's/^listening on //p' "$work/$name.out")"
    printf -v "HTTP_$name" '%s' "$(sed -n 's/^http on //p' "$work/$name.out")"
}

"$PEERD" init --data "$work/A" >/dev/null
"$PEERD" init --join "$("$PEERD" cluster-code --data "$work/A")" --data "$work/B" >/dev/null
start A
start B --peer "$SYNC_A"
echo "A: sync $SYNC_A, http $HTTP_A"
echo "B: sync $SYNC_B, http $HTTP_B, dialing A"

A="http://$HTTP_A"
B="http://$HTTP_B"
entity="/entities/inspection/i-1"

declared=$(curl -sf -X POST "$A/domains" -H 'Content-Type: application/json' --data-binary "@$declaration")
echo "A declared $(json entity_type <<<"$declared") version $(json version <<<"$declared")," \
    "scope $(json scope <<<"$declared")"

post() { curl -sf -X POST "$A$entity/events" -H 'Content-Type: application/json' "$@"; }
opened='{"type":"Opened","site":"North gate","inspector":"p-7","due_ms":1798761600000}'
first=$(post -H 'Idempotency-Key: open-i-1' -d "$opened" | json replica_event_id)
again=$(post -H 'Idempotency-Key: open-i-1' -d "$opened" | json replica_event_id)
[[ $first == "$again" ]] || fail "the retry with the same Idempotency-Key stored a second event"
echo "A: Opened $first (sent twice with one Idempotency-Key, stored once)"
for payload in '{"type":"ChecklistTicked","item":"fence"}' '{"type":"ChecklistTicked","item":"gate"}' \
    '{"type":"FindingRecorded"}' '{"type":"StatusChanged","status":"in_progress"}'; do
    post -d "$payload" >/dev/null
    echo "A: $payload"
done

refused=$(curl -s -o "$work/refused.json" -w '%{http_code}' -X POST "$A$entity/events" \
    -H 'Content-Type: application/json' -d '{"type":"Opened","site":42,"inspector":"p-7"}')
field=$(json error field <"$work/refused.json")
[[ $refused == 422 && $field == site ]] || fail "expected 422 naming site, got $refused $(cat "$work/refused.json")"
echo "A refused {\"type\":\"Opened\",\"site\":42,…}: $refused $(json error code <"$work/refused.json")," \
    "field $field: $(json error message <"$work/refused.json")"

state_a=$(curl -sf "$A$entity")
state_b=""
hash_a=""
hash_b=""
deadline=$((SECONDS + 30))
while ((SECONDS < deadline)); do
    state_b=$(curl -s "$B$entity" || true)
    hash_a=$(curl -sf "$A/status" | json state_hash)
    hash_b=$(curl -sf "$B/status" | json state_hash)
    [[ $state_b == "$state_a" && $hash_a == "$hash_b" ]] && break
    sleep 0.2
done

echo "A $entity: $state_a"
echo "B $entity: $state_b"
echo "A state hash: $hash_a"
echo "B state hash: $hash_b"
[[ $state_b == "$state_a" && $hash_a == "$hash_b" ]] || fail "B did not converge with A within 30 s"
echo converged
