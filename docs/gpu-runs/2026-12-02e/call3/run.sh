#!/usr/bin/env bash
# Session 26, call 3: the committed tree (fc5f34f) on a fresh H200: site.yml (its quick
# check a host's first run), the report's JSON kept flat; then check mode, verify skipped.
set -u
o=$OUT
OUT=$o/site tools/device/run-on-gpu.sh play playbooks/site.yml > /dev/null 2>&1; echo "site rc=$?"
grep -E "ok=|wall" $o/site/site-recap.txt | tail -2; grep -E "PASS|FAIL" $o/site/site-recap.txt | tail -1
f=$(find $o/site/reports -name "gpu-check.json" | head -1); cp "$f" $o/gpu-check.json
python3 - $o/gpu-check.json <<'P'
import json,sys
d=json.load(open(sys.argv[1]))
def walk(x, path=""):
    if isinstance(x, dict):
        for k,v in x.items():
            if k in ("wall_seconds","first_step_seconds","cudnn_algorithms","img_s","window_spread","verdict"): print(path+"/"+k, v)
            walk(v, path+"/"+k)
walk(d)
P
rm -rf $o/site/reports
OUT=$o/check tools/device/run-on-gpu.sh play playbooks/site.yml --check --skip-tags verify > /dev/null 2>&1; echo "check rc=$?"
grep -E "ok=|wall" $o/check/site-recap.txt | tail -2
