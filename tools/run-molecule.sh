#!/usr/bin/env bash
# Run Molecule scenarios against podman test hosts, with the fixture server up.
#   tools/run-molecule.sh              every scenario under molecule/
#   tools/run-molecule.sh nouveau cuda only those
# Called by `make molecule`, which sets CONTAINERS_CONF, CONTAINERS_STORAGE_CONF,
# KINDLING_CACHE and PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${KINDLING_CACHE:?run through make}"
port=${KINDLING_FIXTURE_PORT:-8765}
export KINDLING_FIXTURE_URL="http://127.0.0.1:${port}"

molecule/_shared/image/build-image.sh

serve=(python3 tests/fixture_sources/serve_fixtures.py --out "$KINDLING_CACHE/fixtures" --port "$port")
"${serve[@]}" start
trap '"${serve[@]}" stop >/dev/null 2>&1 || true' EXIT

if [ $# -gt 0 ]; then
  scenarios=("$@")
else
  mapfile -t scenarios < <(find molecule -mindepth 2 -maxdepth 2 -name molecule.yml -printf '%h\n' | xargs -n1 basename | sort)
fi

failed=()
for s in "${scenarios[@]}"; do
  start=$(date +%s)
  echo "=== molecule test -s $s"
  if molecule test -s "$s"; then
    echo "=== $s passed in $(( $(date +%s) - start )) s"
  else
    echo "=== $s FAILED after $(( $(date +%s) - start )) s"
    failed+=("$s")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "molecule: failed scenarios: ${failed[*]}"
  exit 1
fi
echo "molecule: ${#scenarios[@]} scenarios passed"
