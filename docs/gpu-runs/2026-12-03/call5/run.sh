#!/usr/bin/env bash
# Session 30, call 2: the driver's verify judged on the controller (nvidia_driver_verdict and
# nvidia_driver_service_verdict as action plugins), conda_pytorch's paths derived once, on a
# fresh H200: site.yml, its verify report lines, the no-op re-run (--skip-tags verify) of this
# tree and of 6810596 (main) alternately three times each, check mode, and the driver stage's verify alone
# (playbooks/nvidia_driver.yml --tags verify).
set -u
o=$OUT
top=$PWD
OUT=$o/site tools/device/run-on-gpu.sh play playbooks/site.yml > /dev/null 2>&1; echo "site rc=$?"
grep -E "ok=|wall" $o/site/site-recap.txt | tail -2; grep -E "PASS|FAIL" $o/site/site-recap.txt | tail -1
grep -A3 "Judge what the working driver serves\|Report the working driver" $o/site/site-recap.txt | grep -E "ok:|msg|skipping" | head -6
cp $o/site/reports/*/gpu-check.json $o/site/ 2>/dev/null; rm -rf $o/site/reports
run() { # label dir [args]
  local label=$1 dir=$2 t0; shift 2
  cd "$dir"; t0=$(date +%s.%N)
  OUT=$o/$label tools/device/run-on-gpu.sh play playbooks/site.yml --skip-tags verify "$@" > /dev/null 2>&1
  echo "$label rc=$? wall $(python3 -c "print(round($(date +%s.%N) - $t0, 2))") s"
  grep -E "ok=" $o/$label/site-recap.txt | tail -1; cd "$top"
}
for i in 1 2 3; do run noop$i "$top"; run prev-noop$i "$top/.devcarry/prev"; done
run check "$top" --check
OUT=$o/verify tools/device/run-on-gpu.sh play playbooks/nvidia_driver.yml --tags verify > /dev/null 2>&1; echo "driver verify rc=$?"
grep -E "ok=|wall" $o/verify/nvidia_driver-recap.txt | tail -2
grep -A3 "Report the working driver" $o/verify/nvidia_driver-recap.txt | grep -E "msg" | head -2
cd $o && tar -czf call5.tgz site noop* prev-noop* check verify && rm -rf site noop* prev-noop* check verify
