#!/usr/bin/env bash
# Session 26, call 4: this tree on a fresh H200: site.yml, then the no-op re-run
# (--skip-tags verify) of this tree and of a7e4c61 (the previous commit) alternately, three
# times each, c90da05 (the session's start) once, then this tree once with profile_tasks.
set -u
o=$OUT
top=$PWD
cp -r .whl .devcarry/old/; cp -r .whl .devcarry/prev/
OUT=$o/site tools/device/run-on-gpu.sh play playbooks/site.yml > /dev/null 2>&1; echo "site rc=$?"
grep -E "ok=|wall" $o/site/site-recap.txt | tail -2; grep -E "PASS|FAIL" $o/site/site-recap.txt | tail -1
rm -rf $o/site/reports
for i in 1 2 3; do
  cd $top; OUT=$o/noop$i tools/device/run-on-gpu.sh play playbooks/site.yml --skip-tags verify > /dev/null 2>&1; echo "noop$i rc=$?"
  grep -E "ok=|wall" $o/noop$i/site-recap.txt
  cd $top/.devcarry/prev; OUT=$o/prev-noop$i tools/device/run-on-gpu.sh play playbooks/site.yml --skip-tags verify > /dev/null 2>&1; echo "prev noop$i rc=$?"
  grep -E "ok=|wall" $o/prev-noop$i/site-recap.txt
done
cd $top/.devcarry/old; OUT=$o/before-noop1 tools/device/run-on-gpu.sh play playbooks/site.yml --skip-tags verify > /dev/null 2>&1; echo "before (c90da05) noop1 rc=$?"
grep -E "ok=|wall" $o/before-noop1/site-recap.txt
cd $top
export ANSIBLE_COLLECTIONS_PATH=$PWD/.devcarry/collections PROFILE_TASKS_TASK_OUTPUT_LIMIT=200
OUT=$o/noop4 tools/device/run-on-gpu.sh play playbooks/site.yml --skip-tags verify > /dev/null 2>&1; echo "noop4 (profile_tasks) rc=$?"
grep -E "ok=|wall" $o/noop4/site-recap.txt
