#!/usr/bin/env bash
# Session 27, call 1: this tree on a fresh H200: site.yml, then the no-op re-run
# (--skip-tags verify) of this tree and of f2b4032 (the session's start) alternately, three
# times each, check mode, the no-op with profile_tasks, and one with -v for the reuse flags.
set -u
o=$OUT
top=$PWD
cp -r .whl .devcarry/old/
OUT=$o/site tools/device/run-on-gpu.sh play playbooks/site.yml > /dev/null 2>&1; echo "site rc=$?"
grep -E "ok=|wall" $o/site/site-recap.txt | tail -2; grep -E "PASS|FAIL" $o/site/site-recap.txt | tail -1
cp $o/site/reports/*/gpu-check.json $o/site/ 2>/dev/null; rm -rf $o/site/reports
for i in 1 2 3; do
  cd $top; OUT=$o/noop$i tools/device/run-on-gpu.sh play playbooks/site.yml --skip-tags verify > /dev/null 2>&1; echo "noop$i rc=$?"
  grep -E "ok=|wall" $o/noop$i/site-recap.txt
  cd $top/.devcarry/old; OUT=$o/before-noop$i tools/device/run-on-gpu.sh play playbooks/site.yml --skip-tags verify > /dev/null 2>&1; echo "before (f2b4032) noop$i rc=$?"
  grep -E "ok=|wall" $o/before-noop$i/site-recap.txt
done
cd $top
OUT=$o/check tools/device/run-on-gpu.sh play playbooks/site.yml --check --skip-tags verify > /dev/null 2>&1; echo "check rc=$?"
grep -E "ok=|wall" $o/check/site-recap.txt
OUT=$o/verbose tools/device/run-on-gpu.sh play playbooks/site.yml --skip-tags verify -v > /dev/null 2>&1; echo "verbose noop rc=$?"
grep -E "ok=|wall" $o/verbose/site-recap.txt
python3 - "$o/verbose/site-recap.txt" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
for task in ("nvidia_driver : Check the planned driver and work out its packages (module_utils/stack_plan.py)",
             "cuda : Check the toolkits and cuDNN and work out their packages (module_utils/stack_plan.py)",
             "conda_pytorch : Check torch, the wheel variant, Python and the GPUs against the compatibility table"):
    flags = []
    for block in text.split("\nTASK [")[1:]:
        if block.startswith(task + "]"):
            found = re.findall(r"^\s*reused: (true|false)$", block, flags=re.M)
            skipped = "skipping:" in block.split("\n", 3)[2] if len(block.split("\n")) > 2 else False
            flags.append("skipped" if not found else all(f == "true" for f in found))
    print(task.split(" :")[0], "reused per run:", flags)
PY
export ANSIBLE_COLLECTIONS_PATH=$PWD/.devcarry/collections PROFILE_TASKS_TASK_OUTPUT_LIMIT=200
OUT=$o/noop4 tools/device/run-on-gpu.sh play playbooks/site.yml --skip-tags verify > /dev/null 2>&1; echo "noop4 (profile_tasks) rc=$?"
grep -E "ok=|wall" $o/noop4/site-recap.txt
grep -E -- "--- [0-9.]+s" $o/noop4/site-recap.txt | awk '{t=$NF; sub("s","",t); if (t+0 >= 0.3) n++} END {print n " tasks of 0.3 s or more"}'
