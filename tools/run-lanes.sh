#!/usr/bin/env bash
# Run the checks of `make test` in lanes side by side, and report each step's time.
# Needs the test bed (tools/testbed.sh): `make test` does that.
#
# Each lane runs its steps one after the other and stops at its first failure; the lanes
# run at the same time. The build machine has 2 cores, and most of a Molecule scenario's
# time is spent waiting on apt, pip, dpkg and systemd in its container, so two scenario
# lanes and one lane of CPU-bound checks fit beside each other.
#
# Every test host uses host networking (docs/DEVELOPMENT.md), so scenarios whose services
# listen on a port (JupyterLab 8888, dcgm-exporter 9400: jupyter, dcgm_exporter, default)
# share one lane: they never run at once. The reliability suite starts no service (its
# site.yml runs are check mode or refused before any change; its converges are the driver
# stage's), so it follows the quick checks, in the lane that would otherwise idle.
#
#   tools/run-lanes.sh            every lane
# Each step's whole output is in $KINDLING_CACHE/test-logs/<lane>.log; the times are also
# written to $KINDLING_CACHE/test-logs/times.tsv (lane, step, seconds, status).
set -uo pipefail
cd "$(dirname "$0")/.."
: "${KINDLING_CACHE:?run through make test}"
log_dir="$KINDLING_CACHE/test-logs"
mkdir -p "$log_dir"
times="$log_dir/times.tsv"
: >"$times"

# Scenarios whose services listen on host ports (see above).
PORT_SCENARIOS=(jupyter dcgm_exporter default)
mapfile -t all < <(find molecule -mindepth 2 -maxdepth 2 -name molecule.yml -printf '%h\n' | xargs -n1 basename | sort)
other=()
for s in "${all[@]}"; do
  [[ " ${PORT_SCENARIOS[*]} " == *" $s "* ]] || other+=("$s")
done
# The longest scenario first, so that the lane's tail is short ones.
if [[ " ${other[*]} " == *" debian_archive "* ]]; then
  rest=()
  for s in "${other[@]}"; do [ "$s" = debian_archive ] || rest+=("$s"); done
  other=(debian_archive "${rest[@]}")
fi

run_lane() {
  local lane=$1; shift
  local log="$log_dir/$lane.log" step start rc
  : >"$log"
  for step in "$@"; do
    start=$(date +%s)
    echo "[$lane] start: $step"
    echo "=== $step" >>"$log"
    bash -c "$step" >>"$log" 2>&1
    rc=$?
    local took=$(( $(date +%s) - start ))
    if [ $rc -eq 0 ]; then
      printf '%s\t%s\t%s\tpassed\n' "$lane" "$step" "$took" >>"$times"
      echo "[$lane] passed in ${took} s: $step"
    else
      printf '%s\t%s\t%s\tFAILED\n' "$lane" "$step" "$took" >>"$times"
      echo "[$lane] FAILED after ${took} s: $step (output: $log)"
      tail -n 40 "$log" | sed "s/^/[$lane] /"
      return 1
    fi
  done
}

molecule_steps() {
  local s
  for s in "$@"; do printf 'tools/run-molecule.sh %s\n' "$s"; done
}

# Molecule (ansible-compat) runs `ansible-galaxy collection install -r requirements.yml`
# into collections/ at the start of every scenario; two starting at once race on creating
# collections/ansible_collections ("File exists"). Made here, once, before the lanes.
mkdir -p collections/ansible_collections

started=$(date +%s)
mapfile -t port_steps < <(molecule_steps "${PORT_SCENARIOS[@]}")
mapfile -t other_steps < <(molecule_steps "${other[@]}")
run_lane checks "make --no-print-directory lint" "make --no-print-directory unit" \
  "make --no-print-directory registry" "pytest -q -p no:cacheprovider tests/reliability" &
pids=($!)
run_lane ports "${port_steps[@]}" &
pids+=($!)
run_lane packages "${other_steps[@]}" &
pids+=($!)

failed=0
for pid in "${pids[@]}"; do
  wait "$pid" || failed=1
done
echo
echo "step times (seconds), all lanes in $(( $(date +%s) - started )) s:"
awk -F'\t' '{printf "  %-9s %6s s  %-7s %s\n", $1, $3, $4, $2}' "$times"
if [ $failed -ne 0 ]; then
  echo "make test: a lane failed (logs in $log_dir)"
  exit 1
fi
