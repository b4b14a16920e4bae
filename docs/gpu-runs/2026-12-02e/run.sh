#!/usr/bin/env bash
# Session 26, call 2: this tree on a fresh H200. site.yml (its quick check is a first run:
# an empty CUDA JIT cache), then the no-op re-run (--skip-tags verify) of this tree and of
# the tree before (c90da05, in .devcarry/old) alternately, three times each, on the same
# machine; then once more with profile_tasks.
set -u
o=$OUT
top=$PWD
cp -r .whl .devcarry/old/
OUT=$o/site tools/device/run-on-gpu.sh play playbooks/site.yml > /dev/null 2>&1; echo "site rc=$?"
grep -E "ok=|wall" $o/site/site-recap.txt | tail -2; grep -E "PASS|FAIL" $o/site/site-recap.txt | tail -2
grep -E "done in" $o/site/site-recap.txt | tail -2
for i in 1 2 3; do
  cd $top; OUT=$o/noop$i tools/device/run-on-gpu.sh play playbooks/site.yml --skip-tags verify > /dev/null 2>&1; echo "noop$i rc=$?"
  grep -E "ok=|wall" $o/noop$i/site-recap.txt
  cd $top/.devcarry/old; OUT=$o/before-noop$i tools/device/run-on-gpu.sh play playbooks/site.yml --skip-tags verify > /dev/null 2>&1; echo "before noop$i rc=$?"
  grep -E "ok=|wall" $o/before-noop$i/site-recap.txt
done
cd $top
export ANSIBLE_COLLECTIONS_PATH=$PWD/.devcarry/collections PROFILE_TASKS_TASK_OUTPUT_LIMIT=200
OUT=$o/noop4 tools/device/run-on-gpu.sh play playbooks/site.yml --skip-tags verify > /dev/null 2>&1; echo "noop4 (profile_tasks) rc=$?"
grep -E "ok=|wall" $o/noop4/site-recap.txt
rm -rf $o/site/reports/*/*.html 2>/dev/null; true
