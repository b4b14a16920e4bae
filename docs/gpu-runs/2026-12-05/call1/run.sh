set -x
nvidia-smi -q -x > $OUT/idle-q.xml; nvidia-smi > $OUT/smi.txt; python3 -V; python3 -c 'import torch;print(torch.__version__)'
python3 .devcarry/bw.py | tee $OUT/bw.json
( time python3 roles/gpu_check/files/kindling_bench --profile quick --modes fp32,tf32,amp_fp16,amp_bf16,amp_fp16_cl,amp_bf16_cl --probes h2d,matmul --output $OUT/h100-modes.json --quiet ) 2>&1 | tail -5
python3 -c "import json;r=json.load(open('$OUT/h100-modes.json'));print({m:(v.get('img_s'),v.get('batch_size')) for m,v in r['modes'].items()}); print(r.get('probes'))"
OUT=$OUT/main tools/device/run-on-gpu.sh play playbooks/verify.yml > /dev/null 2>&1; tail -25 $OUT/main/verify-recap.txt
