#!/usr/bin/env bash
# Session 29, call 1: this tree (working tree) on a fresh H200: site.yml, then the no-op re-run
# (--skip-tags verify) of this tree and of e876658 (main) alternately, five times,
# then 5e73517 (the tree before issue 18) alternately with this tree three times
# each; check mode; one no-op with -v (which tasks ran a module); one with profile_tasks.
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
for i in 1 2 3 4 5; do run noop$i "$top"; run prev-noop$i "$top/.devcarry/prev"; done
for i in 1 2 3; do run base-noop$i "$top/.devcarry/base"; run noop$((5 + i)) "$top"; done
run check "$top" --check
run verbose "$top" -v
python3 - "$o/verbose/site-recap.txt" <<'PY'
import sys
text = open(sys.argv[1]).read()
for block in text.split("\nTASK [")[1:]:
    head = block.split("]", 1)[0]
    if any(k in head for k in ("Write the login-shell", "Work out which toolkits", "Ask the toolkit cuda_home",
                               "Install the missing toolkits", "Install, pin and hold the driver packages (not",
                               "Run nvidia-persistenced")):
        body = block.split("\n", 3)
        print(head, "->", " | ".join(l.strip()[:90] for l in body[1:3]))
PY
grep -c "^TASK \[" $o/verbose/site-recap.txt | sed 's/^/tasks shown: /'
export ANSIBLE_COLLECTIONS_PATH=$PWD/.devcarry/collections PROFILE_TASKS_TASK_OUTPUT_LIMIT=200
run profile "$top"
grep -E -- "--- [0-9.]+s" $o/profile/site-recap.txt | awk '{t=$NF; sub("s","",t); if (t+0 >= 0.3) n++} END {print n " tasks of 0.3 s or more"}'
grep -E -- "--- [0-9.]+s" $o/profile/site-recap.txt | head -16
grep -E -- "--- [0-9.]+s" $o/profile/site-recap.txt | awk '{t=$NF; sub("s","",t); s+=t; n++} END {print n " tasks, " s " s in tasks"}'
cd $o && tar -czf call1.tgz site noop* prev-noop* base-noop* check verbose profile && rm -rf site noop* prev-noop* base-noop* check verbose profile
ls -la $o
