#!/usr/bin/env bash
# Run Molecule scenarios against podman test hosts, one after the other, and report
# which failed. Needs the test bed (tools/testbed.sh): `make molecule` does that.
#   tools/run-molecule.sh              every scenario under molecule/
#   tools/run-molecule.sh nouveau cuda only those
set -euo pipefail
cd "$(dirname "$0")/.."

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
