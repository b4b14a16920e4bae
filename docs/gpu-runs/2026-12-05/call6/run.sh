# Healthy verify (the judged quick check, its floors), memheld verify, then the quick profile's
# time: d7c5dc1 against this tree, alternating. Only summaries come back.
R=$OUT/run; mkdir -p $R
OUT=$R/healthy tools/device/run-on-gpu.sh play playbooks/verify.yml >/dev/null 2>&1
cp $R/healthy/reports/localhost/gpu-check.md $OUT/healthy-gpu-check.md
python3 - $R/healthy/reports/localhost/gpu-check.json <<'PY' > $OUT/healthy-summary.txt
import json,sys
r=json.load(open(sys.argv[1])); print(r['summary']); print(r.get('floors_summary'))
for m,j in r['judgement'].items(): print(m, j['img_s'], j['reference'], j['reference_basis'], j['status'])
for f in r.get('floors',[]): print(f['name'], f.get('measured'), f['floor'], f['status'])
print('module_seconds', r['throughput'].get('wall_seconds'))
PY
tail -1 $R/healthy/verify-recap.txt >> $OUT/healthy-summary.txt
python3 tools/device/contend.py memheld 74 > /dev/null 2>&1 & P=$!; sleep 15
OUT=$R/memheld tools/device/run-on-gpu.sh play playbooks/verify.yml -e gpu_check_busy_wait=20 >/dev/null 2>&1
kill $P; wait $P 2>/dev/null
grep -E "could not measure|NOT MEASURED|rc=" $R/memheld/verify-recap.txt | cut -c1-600 > $OUT/memheld-summary.txt
for i in 1 2; do for t in old new; do
  d=roles/gpu_check/files/kindling_bench; [ $t = old ] && d=.devcarry/old/$d
  s=$(date +%s.%N); python3 $d --profile quick --output $R/quick-$t-$i.json --quiet >/dev/null 2>&1
  echo "$t $i rc=$? wall=$(python3 -c "print(round($(date +%s.%N)-$s,1))")" >> $OUT/quick-timing.txt
done; done
python3 -c "
import json,glob
for f in sorted(glob.glob('$R/quick-*.json')):
    r=json.load(open(f)); print(f.split('/')[-1], r.get('wall_seconds'), {m:v.get('img_s') for m,v in r['modes'].items()})
" >> $OUT/quick-timing.txt
cat $OUT/*.txt
