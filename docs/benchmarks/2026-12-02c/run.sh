#!/usr/bin/env bash
# Session 26, call 1. (a) The quick profile's first-run time with cuDNN autotune vs its
# heuristics per mode, each run with an empty CUDA JIT cache of its own (CUDA_CACHE_PATH),
# on one machine. (b) What one Ansible module task costs here, and where.
set -u
o=$OUT
b() { # name, cache dir, args...
  local n=$1 c=$2; shift 2
  local s=$SECONDS
  CUDA_CACHE_PATH=$c python3 roles/gpu_check/files/kindling_bench --profile quick --output $o/$n.json "$@" > $o/$n.log 2>&1
  echo "$n rc=$? wall=$((SECONDS-s)) s"
  python3 - "$o/$n.json" <<'P'
import json,sys
d=json.load(open(sys.argv[1]))
print("  wall_seconds", d["wall_seconds"])
for m,r in d["modes"].items():
    print("  %-12s %8s img/s  first %6s s  warmup %6s s  spread %s  %s" % (m, r["img_s"], r["first_step_seconds"], r["warmup_seconds"], r["window_spread"], r.get("cudnn_algorithms")))
P
}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
b e0-autotune-cold  /tmp/jit0
b e1-heur-amp-cold  /tmp/jit1 --cudnn-heuristics amp_fp16,amp_fp16_cl
b e2-heur-all-cold  /tmp/jit2 --cudnn-heuristics fp32,amp_fp16,amp_fp16_cl
b e3-autotune-cold  /tmp/jit3
b e4-heur-amp-warm  /tmp/jit1 --cudnn-heuristics amp_fp16,amp_fp16_cl
b e5-autotune-warm  /tmp/jit3
du -sh /tmp/jit0 /tmp/jit1 /tmp/jit2 /tmp/jit3
# (b) Ansible: 20 tasks of stat, of a Kindling read-only module, with timing.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/kindling-site .whl/*.whl
export PYTHONPATH=/tmp/kindling-site PATH=/tmp/kindling-site/bin:$PATH
python3 - <<'P'
t=["- hosts: localhost\n  gather_facts: false\n  tasks:"]
for i in range(20):
    t.append(f"    - name: stat{i}\n      ansible.builtin.stat: {{path: /etc}}")
open('/tmp/stat20.yml','w').write("\n".join(t)+"\n")
t=["- hosts: localhost\n  gather_facts: false\n  tasks:"]
for i in range(20):
    t.append(f"    - name: pci{i}\n      nvidia_pci_facts:")
open('/tmp/pci20.yml','w').write("\n".join(t)+"\n")
t=["- hosts: localhost\n  gather_facts: false\n  tasks:"]
for i in range(20):
    t.append(f"    - name: dbg{i}\n      ansible.builtin.debug: {{msg: x}}")
open('/tmp/debug20.yml','w').write("\n".join(t)+"\n")
P
cp /tmp/stat20.yml /tmp/pci20.yml /tmp/debug20.yml playbooks/ 
for p in debug20 stat20 pci20 stat20 pci20; do
  s=$(date +%s.%N); ansible-playbook -i inventories/preinstalled playbooks/$p.yml > $o/$p.txt 2>&1; rc=$?
  echo "$p rc=$rc $(python3 -c "print(round($(date +%s.%N)-$s,2))") s"
done
s=$(date +%s.%N); ANSIBLE_PIPELINING=1 ansible-playbook -i inventories/preinstalled playbooks/pci20.yml > /dev/null 2>&1; echo "pci20 pipelining $(python3 -c "print(round($(date +%s.%N)-$s,2))") s"
ANSIBLE_KEEP_REMOTE_FILES=1 ansible localhost -i inventories/preinstalled -m nvidia_pci_facts -vvv > $o/keep.txt 2>&1
f=$(ls -d ~/.ansible/tmp/ansible-tmp-*/AnsiballZ_nvidia_pci_facts.py | head -1); echo "kept: $f"
for i in 1 2 3; do s=$(date +%s.%N); python3 $f > /dev/null; echo "AnsiballZ direct $(python3 -c "print(round($(date +%s.%N)-$s,3))") s"; done
python3 -X importtime $f 2> $o/importtime.txt > /dev/null; sort -t'|' -k2 -n $o/importtime.txt | tail -15
s=$(date +%s.%N); python3 -c "import ansible.module_utils.basic"; echo "import basic $(python3 -c "print(round($(date +%s.%N)-$s,3))") s"
python3 -c "import sys; print(sys.version)"; nproc
rm -f playbooks/stat20.yml playbooks/pci20.yml playbooks/debug20.yml
