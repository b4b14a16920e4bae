# Quick profile wall time, main (d7c5dc1) against this tree, alternating on one machine.
# Run from the repository root on the GPU machine; OLD is an unpacked `git archive d7c5dc1`.
set -x
for i in 1 2; do
  for t in old new; do
    d=roles/gpu_check/files/kindling_bench; [ $t = old ] && d=${OLD:?a git archive of the baseline commit}/roles/gpu_check/files/kindling_bench
    s=$(date +%s.%N); python3 $d --profile quick --output $OUT/quick-$t-$i.json --quiet > /dev/null 2>&1; rc=$?
    echo "$t run $i: rc=$rc wall $(python3 -c "print(round($(date +%s.%N)-$s,1))") s"
  done
done
python3 -c "
import json,glob
for f in sorted(glob.glob('$OUT/quick-*.json')):
    r=json.load(open(f)); print(f.split('/')[-1], r.get('wall_seconds'), {m:v.get('img_s') for m,v in r['modes'].items()}, {p:{k:v for k,v in (x or {}).items() if k in ('gb_s','d2h_gb_s','status','link','tflop_s')} for p,x in (r.get('probes') or {}).items()})
"
