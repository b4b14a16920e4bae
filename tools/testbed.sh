#!/usr/bin/env bash
# Run a command with the test bed up: the Molecule test-host image built (or reused)
# and the fixture server (stand-ins for the vendor servers) serving on loopback.
#   tools/testbed.sh tools/run-molecule.sh nouveau
#   tools/testbed.sh pytest -q tests/reliability
# Called by `make molecule` and `make reliability`, which set CONTAINERS_CONF,
# CONTAINERS_STORAGE_CONF, KINDLING_CACHE and PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${KINDLING_CACHE:?run through make}"
port=${KINDLING_FIXTURE_PORT:-8765}
export KINDLING_FIXTURE_URL="http://127.0.0.1:${port}"

molecule/_shared/image/build-image.sh
# molecule/debian_archive keeps Debian's real .debs here between runs (its apt archive).
mkdir -p "$KINDLING_CACHE/apt-archives/debian12"

serve=(python3 tests/fixture_sources/serve_fixtures.py --out "$KINDLING_CACHE/fixtures" --port "$port")
# A test bed inside another (make reliability from a lane of make test) leaves the outer
# one's server running: only the wrapper that started the server stops it.
if "${serve[@]}" status >/dev/null 2>&1; then
  "$@"
  exit
fi
"${serve[@]}" start
trap '"${serve[@]}" stop >/dev/null 2>&1 || true' EXIT
"$@"
