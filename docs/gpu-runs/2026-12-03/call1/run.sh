#!/usr/bin/env bash
# Session 28: this tree (23b4d9d) on a fresh H200: site.yml, then the no-op re-run
# (--skip-tags verify) five times; then 5e73517 (the tree before issue 18's first commit,
# b4f97c4) three times on the same machine, then this tree once more.
set -u
o=$OUT
top=$PWD
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1
OUT=$o/site tools/device/run-on-gpu.sh play playbooks/site.yml > /dev/null 2>&1; echo "site rc=$?"
grep -E "ok=|wall" $o/site/site-recap.txt | tail -2; grep -E "PASS|FAIL" $o/site/site-recap.txt | tail -1
cp $o/site/reports/*/gpu-check.json $o/site/ 2>/dev/null; rm -rf $o/site/reports
run() { # label dir
  local label=$1 dir=$2 t0
  cd "$dir"; t0=$(date +%s.%N)
  OUT=$o/$label tools/device/run-on-gpu.sh play playbooks/site.yml --skip-tags verify > /dev/null 2>&1
  echo "$label rc=$? wall $(python3 -c "print(round($(date +%s.%N) - $t0, 2))") s"
  grep -E "ok=" $o/$label/site-recap.txt | tail -1; cd "$top"
}
for i in 1 2 3 4 5; do run noop$i "$top"; done
for i in 1 2 3; do run before-noop$i "$top/.devcarry/before"; done
run after-before "$top"
cd $o && tar -czf call1.tgz site noop* before-noop* after-before && rm -rf site noop* before-noop* after-before
ls -la $o
