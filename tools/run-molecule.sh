#!/usr/bin/env bash
# Run Molecule scenarios against podman test hosts, one after the other, and report
# which failed. Needs the test bed (tools/testbed.sh): `make molecule` does that.
#   tools/run-molecule.sh              every scenario under molecule/
#   tools/run-molecule.sh nouveau cuda only those
# Each scenario's whole output is also written to $KINDLING_CACHE/molecule-logs/<scenario>.log,
# and that path is exported to Molecule as KINDLING_MOLECULE_LOG, so that verifiers can
# check Ansible's own output (e.g. that no secret appears in it: molecule/jupyter).
set -euo pipefail
cd "$(dirname "$0")/.."
log_dir="${KINDLING_CACHE:-$HOME/.cache/kindling}/molecule-logs"
mkdir -p "$log_dir"

if [ $# -gt 0 ]; then
  scenarios=("$@")
else
  mapfile -t scenarios < <(find molecule -mindepth 2 -maxdepth 2 -name molecule.yml -printf '%h\n' | xargs -n1 basename | sort)
fi

failed=()
for s in "${scenarios[@]}"; do
  start=$(date +%s)
  log="$log_dir/$s.log"
  : >"$log"
  echo "=== molecule test -s $s (output also in $log)"
  # pipefail (set above): the pipeline's status is molecule's, not tee's.
  if KINDLING_MOLECULE_LOG="$log" molecule test -s "$s" 2>&1 | tee -a "$log"; then
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
