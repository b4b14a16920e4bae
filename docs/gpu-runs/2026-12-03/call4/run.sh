#!/usr/bin/env bash
# Session 30, one call: this tree (generated role defaults, the cudnn_tarball, group_share and
# nouveau initramfs changes) on a fresh H200: site.yml; then the no-op re-run
# (--skip-tags verify) of this tree and of 6810596 (main) alternately, four times each;
# check mode; a second site.yml with verify (the judged check on a warm host).
set -u
o=$OUT
top=$PWD
OUT=$o/site tools/device/run-on-gpu.sh play playbooks/site.yml > /dev/null 2>&1; echo "site rc=$?"
grep -E "ok=|wall" $o/site/site-recap.txt | tail -2; grep -E "PASS|FAIL" $o/site/site-recap.txt | tail -1
cp $o/site/reports/*/gpu-check.json $o/site/ 2>/dev/null; rm -rf $o/site/reports
run() { # label dir [args]
  local label=$1 dir=$2 t0; shift 2
  cd "$dir"; t0=$(date +%s.%N)
  OUT=$o/$label tools/device/run-on-gpu.sh play playbooks/site.yml --skip-tags verify "$@" > /dev/null 2>&1
  echo "$label rc=$? wall $(python3 -c "print(round($(date +%s.%N) - $t0, 2))") s"
  grep -E "ok=" $o/$label/site-recap.txt | tail -1; cd "$top"
}
for i in 1 2 3 4; do run noop$i "$top"; run prev-noop$i "$top/.devcarry/prev"; done
run check "$top" --check
OUT=$o/site2 tools/device/run-on-gpu.sh play playbooks/site.yml > /dev/null 2>&1; echo "site2 rc=$?"
grep -E "ok=|wall" $o/site2/site-recap.txt | tail -2; grep -E "PASS|FAIL" $o/site2/site-recap.txt | tail -1
cp $o/site2/reports/*/gpu-check.json $o/site2/ 2>/dev/null; rm -rf $o/site2/reports
cd $o && tar -czf call4.tgz site site2 noop* prev-noop* check && rm -rf site site2 noop* prev-noop* check
ls -la $o
