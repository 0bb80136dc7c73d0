#!/usr/bin/env bash
# Installs what is missing, checks formatting, builds once, runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh

echo "== swift-format lint"
swift-format lint --strict --recursive Package.swift Sources Tests

echo "== build (debug, with tests; warnings are errors)"
swift build --build-tests -Xswiftc -warnings-as-errors

echo "== tests"
swift test --skip-build --parallel
