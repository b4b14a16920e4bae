#!/usr/bin/env bash
# Session 30, call 4: the GPUs read in one place (gpu_preflight's entry point detect, which a
# stage run alone includes), on a fresh H200: site.yml; each GPU stage's playbook alone
# (nvidia_driver.yml, cuda.yml, conda_pytorch.yml), where the stage reads the GPUs through
# detect; the no-op re-run (--skip-tags verify) of this tree and of 6810596 (main)
# alternately, three times each; check mode.
set -u
o=$OUT
top=$PWD
OUT=$o/site tools/device/run-on-gpu.sh play playbooks/site.yml > /dev/null 2>&1; echo "site rc=$?"
grep -E "ok=|wall" $o/site/site-recap.txt | tail -2; grep -E "PASS|FAIL" $o/site/site-recap.txt | tail -1
cp $o/site/reports/*/gpu-check.json $o/site/ 2>/dev/null; rm -rf $o/site/reports
for stage in nvidia_driver cuda conda_pytorch; do
  OUT=$o/$stage tools/device/run-on-gpu.sh play playbooks/$stage.yml > /dev/null 2>&1; echo "$stage.yml alone rc=$?"
  grep -E "ok=|wall" $o/$stage/$stage-recap.txt | tail -2
  grep -A2 "gpu_preflight : List NVIDIA GPUs" $o/$stage/$stage-recap.txt | grep -E "^(ok|changed|skipping)" | sort | uniq -c
done
run() { # label dir [args]
  local label=$1 dir=$2 t0; shift 2
  cd "$dir"; t0=$(date +%s.%N)
  OUT=$o/$label tools/device/run-on-gpu.sh play playbooks/site.yml --skip-tags verify "$@" > /dev/null 2>&1
  echo "$label rc=$? wall $(python3 -c "print(round($(date +%s.%N) - $t0, 2))") s"
  grep -E "ok=" $o/$label/site-recap.txt | tail -1; cd "$top"
}
for i in 1 2 3; do run noop$i "$top"; run prev-noop$i "$top/.devcarry/prev"; done
run check "$top" --check
grep -c "gpu_preflight : List NVIDIA GPUs" $o/noop1/site-recap.txt | sed 's/^/GPU reads in the no-op: /'
cd $o && tar -czf call7.tgz site nvidia_driver cuda conda_pytorch noop* prev-noop* check && rm -rf site nvidia_driver cuda conda_pytorch noop* prev-noop* check
