#!/usr/bin/env bash
# Session 32, one call: this tree (issue 33's one plan: host_plan parts, no stack entry points;
# role_inputs once; the module renames; inject_facts_as_vars=false; issue 35's flavour auto)
# on a fresh H100 (second call: the skip-without-systemd tag fix in both trees): site.yml; then the no-op re-run (--skip-tags verify) of this tree and of
# 7679aa6 (main before the session) alternately, four times each; check mode; the plan a
# stage alone works out (playbooks/cuda.yml --check).
set -u
o=$OUT
top=$PWD/.devcarry/now
cd "$top"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $o/smi.txt
OUT=$o/site tools/device/run-on-gpu.sh play playbooks/site.yml > /dev/null 2>&1; echo "site rc=$?"
grep -E "ok=|wall" $o/site/site-recap.txt | tail -2; grep -E "PASS|FAIL|could not|is slow" $o/site/site-recap.txt | tail -2 | cut -c1-300
cp $o/site/reports/*/gpu-check.json $o/site/reports/*/plan.json $o/site/ 2>/dev/null; rm -rf $o/site/reports
run() { # label dir [args]
  local label=$1 dir=$2 t0; shift 2
  cd "$dir"; t0=$(date +%s.%N)
  OUT=$o/$label tools/device/run-on-gpu.sh play playbooks/site.yml --skip-tags verify "$@" > /dev/null 2>&1
  echo "$label rc=$? wall $(python3 -c "print(round($(date +%s.%N) - $t0, 2))") s"
  grep -E "ok=" $o/$label/site-recap.txt | tail -1; cd "$top"
}
for i in 1 2 3 4; do run noop$i "$top"; run prev-noop$i "$top/../prev"; done
run check "$top" --check
OUT=$o/cuda-alone tools/device/run-on-gpu.sh play playbooks/cuda.yml --check > /dev/null 2>&1; echo "cuda alone --check rc=$?"
grep -E "ok=" $o/cuda-alone/cuda-recap.txt | tail -1
grep -E "^TASK \[|rechecked" $o/site/site-recap.txt | grep -A1 "part of the host" | head -12
cd $o && tar -czf call2.tgz site noop* prev-noop* check cuda-alone && rm -rf site noop* prev-noop* check cuda-alone
ls -la $o
