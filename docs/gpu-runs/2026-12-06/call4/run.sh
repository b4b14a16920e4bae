#!/usr/bin/env bash
# Session 33 (call 4 runs the same script on the final tree): issue 35's stack records (stack_record_info in stage 1, records written
# through managed_files_write) on a fresh H100: site.yml; the no-op re-run (--skip-tags verify)
# of this tree and of c3b4d92 (main before the session) alternately, three times each; check
# mode; stack_record_info reading the real torch's and torchvision's version.py.
set -u
o=$OUT
top=$PWD/.devcarry/now
cd "$top"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $o/smi.txt
OUT=$o/site tools/device/run-on-gpu.sh play playbooks/site.yml > /dev/null 2>&1; echo "site rc=$?"
grep -E "ok=|wall" $o/site/site-recap.txt | tail -2; grep -E "PASS|FAIL|could not|is slow|newer default" $o/site/site-recap.txt | tail -3 | cut -c1-300
cp $o/site/reports/*/gpu-check.json $o/site/reports/*/plan.json $o/site/ 2>/dev/null; rm -rf $o/site/reports
python3 - "$o/site/plan.json" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))
print("stack_keep:", json.dumps({k: plan.get("stack_keep", {}).get(k) for k in ("recorded", "kept", "sources", "notice")}))
PY
run() { # label dir [args]
  local label=$1 dir=$2 t0; shift 2
  cd "$dir"; t0=$(date +%s.%N)
  OUT=$o/$label tools/device/run-on-gpu.sh play playbooks/site.yml --skip-tags verify "$@" > /dev/null 2>&1
  echo "$label rc=$? wall $(python3 -c "print(round($(date +%s.%N) - $t0, 2))") s"
  grep -E "ok=" $o/$label/site-recap.txt | tail -1; cd "$top"
}
for i in 1 2 3; do run noop$i "$top"; run prev-noop$i "$top/../prev"; done
run check "$top" --check
# The real torch's version files, in an environment's layout, read by stack_record_info.
tv=$(python3 -c "import torch, os; print(os.path.dirname(torch.__file__))")
vv=$(python3 -c "import torchvision, os; print(os.path.dirname(torchvision.__file__))" 2>/dev/null)
py=$(python3 -c "import sys; print('%d.%d' % sys.version_info[:2])")
env=/tmp/kindling-env; mkdir -p $env/lib/python$py/site-packages/torch $env/lib/python$py/site-packages/torchvision
cp $tv/version.py $env/lib/python$py/site-packages/torch/ && cp $tv/version.py $o/torch-version.py
[ -n "$vv" ] && cp $vv/version.py $env/lib/python$py/site-packages/torchvision/ && cp $vv/version.py $o/torchvision-version.py
export PYTHONPATH=/tmp/kindling-site PATH=/tmp/kindling-site/bin:$PATH
ansible localhost -i inventories/preinstalled -m stack_record_info \
  -a "{\"stages\": {\"conda_pytorch\": {\"record\": \"$env/stack-conda_pytorch.json\", \"env_dir\": \"$env\"}}}" 2>&1 | tail -30 | tee $o/stack_record_info.txt
python3 -c "import torch; print('torch', torch.__version__, torch.version.cuda)"
cd $o && tar -czf calls.tgz site noop* prev-noop* check && rm -rf site noop* prev-noop* check
ls -la $o
