#!/usr/bin/env bash
# `promtool check metrics` on a scrape of `tidemark run --embedded`: names, help texts, types
# and histograms as Prometheus' own linter reads them. Installs promtool when missing (Debian's
# prometheus package), so a clean machine runs it. Needs the release binary cargo test built.
set -euo pipefail
cd "$(dirname "$0")/.."
release="${CARGO_TARGET_DIR:-target}/release"
if ! command -v promtool >/dev/null; then
  echo "installing promtool (Debian prometheus)"
  apt-get update -q > /dev/null
  apt-get install -y -q --no-install-recommends prometheus > /dev/null
fi
dir="$(mktemp -d)"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$release"/tidemark run --embedded --duration 20 --metrics-addr "127.0.0.1:$port" > "$dir/out" 2> "$dir/err" &
manager=$!
trap 'kill $manager 2>/dev/null || true' EXIT
# Scrape once the demo has reconciled for a while, so histograms and counters have figures.
scrape=""
for _ in $(seq 1 100); do
  if curl -sf "http://127.0.0.1:$port/metrics" -o "$dir/metrics" && grep -q '^workqueue_adds_total{name="replicaset"} [1-9]' "$dir/metrics"; then
    scrape="$dir/metrics"
    break
  fi
  sleep 0.2
done
if [ -z "$scrape" ]; then
  echo "no scrape with reconciles from the embedded run" >&2
  tail -20 "$dir/err" >&2
  exit 1
fi
sleep 5
curl -sf "http://127.0.0.1:$port/metrics" -o "$scrape"
if ! promtool check metrics < "$scrape" > "$dir/lint" 2>&1; then
  echo "promtool check metrics complains:" >&2
  cat "$dir/lint" >&2
  exit 1
fi
if [ -s "$dir/lint" ]; then
  echo "promtool check metrics complains:" >&2
  cat "$dir/lint" >&2
  exit 1
fi
echo "promtool check metrics: clean ($(grep -vc '^#' "$scrape") samples, $(grep -c '^# TYPE' "$scrape") families)"
