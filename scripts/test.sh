#!/usr/bin/env bash
# Installs what is missing, checks formatting, builds once, runs every test.
#
# The tests run as six processes of the one test bundle at once: Swift
# Testing runs a process's tests on the cooperative pool, which is as wide
# as the machine has cores (2 here), and the integration and lab tests
# spend most of their time waiting for daemons, so one process would run
# them two at a time. `swift test` holds a lock on .build, so the bundle is
# started directly (as `swift test` itself starts it).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh

echo "== swift-format lint"
swift-format lint --strict --recursive Package.swift Sources Tests Examples

echo "== build (debug, with tests; warnings are errors)"
swift build --build-tests -Xswiftc -warnings-as-errors

# Each part: a name, the --filter regex of its tests and a --skip regex (or
# nothing), separated by semicolons.
parts=(
    "integration;^IntegrationTests\.;^IntegrationTests\.(DiscoveryLabTests|ConvergenceLabTests)"
    "integration-lab;^IntegrationTests\.(DiscoveryLabTests|ConvergenceLabTests);"
    "discovery;^DiscoveryTests\.;"
    "simulator;^SimulatorTests\.;"
    "units;^(ReplicaTests|SyncProtocolTests|GossipTests|ConvergenceLabTests|LabReportTests)\.;"
    "lifecycle;^LifecycleTests\.;"
)
# Every test target must be in a part.
for target in $(sed -n 's/.*\.testTarget(.*name: "\([A-Za-z]*\)".*/\1/p' Package.swift); do
    printf '%s\n' "${parts[@]}" | grep -q "$target" || { echo "test.sh: test target $target is in no part" >&2; exit 1; }
done

bundle="$(swift build --show-bin-path)/PeerSyncPackageTests.xctest"
logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT
echo "== tests (${#parts[@]} processes)"
started=$SECONDS
pids=()
for part in "${parts[@]}"; do
    IFS=';' read -r name filter skip <<<"$part"
    arguments=(--testing-library swift-testing --parallel --filter "$filter")
    [ -z "$skip" ] || arguments+=(--skip "$skip")
    "$bundle" "${arguments[@]}" >"$logs/$name.log" 2>&1 &
    pids+=($!)
done
failed=0
for index in "${!parts[@]}"; do
    IFS=';' read -r name _ <<<"${parts[$index]}"
    status=0
    wait "${pids[$index]}" || status=$?
    echo "== tests: $name (exit $status, done after $((SECONDS - started)) s)"
    cat "$logs/$name.log"
    [ "$status" -eq 0 ] || failed=1
done
echo "== tests: summary"
for part in "${parts[@]}"; do
    IFS=';' read -r name _ <<<"$part"
    printf '%-16s %s\n' "$name" "$(grep -a 'Test run with' "$logs/$name.log" | sed 's/\x1b\[[0-9;]*m//g')"
done
# The failures again, at the end, where a truncated log still shows them.
for part in "${parts[@]}"; do
    IFS=';' read -r name _ <<<"$part"
    grep -a '^✘' "$logs/$name.log" | grep -av 'Test run with' | head -n 20 | sed "s/^/$name: /" || true
done
exit "$failed"
