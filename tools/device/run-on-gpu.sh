#!/usr/bin/env bash
# Run Kindling's GPU-path checks on a GPU machine that has torch but no Ansible
# (the project's H200 test machine). Ansible travels as wheels in .whl/ (see
# docs/DEVELOPMENT.md "GPU machine"); results land in $OUT (default ./gpu-run-out).
#   tools/device/run-on-gpu.sh facts        ansible localhost -m nvidia_smi_facts, torch_cuda_facts,
#                                           nvidia_kernel_module_facts, nvidia_pci_facts, cuda_init_facts
#   tools/device/run-on-gpu.sh bench ARGS   the standalone benchmark (the kindling_bench package) with ARGS
#   tools/device/run-on-gpu.sh play FILE [ARGS]  ansible-playbook FILE -i inventories/preinstalled ARGS
#   tools/device/run-on-gpu.sh fleet [ARGS]  tools/fleet_report.py -i inventories/preinstalled ARGS
#   tools/device/run-on-gpu.sh contention    issue 32's Done-when: site.yml on the healthy GPU, then
#                                           verify.yml with another process computing (busy policy
#                                           measure, then the default wait) and holding 74 GiB
#                                           (tools/device/contend.py); each in $OUT/<run>/
#                                           (verify.yml through ansible-runner; the report in $OUT/fleet)
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/gpu-run-out}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 ANSIBLE_FORCE_COLOR=0

install_ansible() {
  [ -x /tmp/kindling-site/bin/ansible ] && return 0
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/kindling-site .whl/*.whl || { echo "could not install the carried wheels"; exit 1; }
}
with_ansible() {
  install_ansible
  export PYTHONPATH=/tmp/kindling-site${PYTHONPATH:+:$PYTHONPATH} PATH=/tmp/kindling-site/bin:$PATH
}

what=${1:?facts, bench, play or fleet}
shift
case "$what" in
  facts)
    with_ansible
    ansible --version | head -1
    ansible localhost -i inventories/preinstalled -m nvidia_smi_facts -a 'require=true' 2>&1 | tee "$OUT/nvidia_smi_facts.txt"
    ansible localhost -i inventories/preinstalled -m torch_cuda_facts \
      -a "python=$(command -v python3) require_cuda=true expect_gpus=1" 2>&1 | tee "$OUT/torch_cuda_facts.txt"
    ansible localhost -i inventories/preinstalled -m nvidia_kernel_module_facts 2>&1 \
      | tee "$OUT/nvidia_kernel_module_facts.txt"
    ansible localhost -i inventories/preinstalled -m nvidia_pci_facts 2>&1 | tee "$OUT/nvidia_pci_facts.txt"
    ansible localhost -i inventories/preinstalled -m cuda_init_facts 2>&1 | tee "$OUT/cuda_init_facts.txt"
    ;;
  bench)
    python3 roles/gpu_check/files/kindling_bench "$@"
    ;;
  play)
    with_ansible
    playbook=${1:?playbook}
    shift
    start=$SECONDS
    KINDLING_REPORT_DIR="$OUT/reports" ansible-playbook "$playbook" -i inventories/preinstalled "$@" 2>&1 \
      | tee "$OUT/$(basename "$playbook" .yml)-recap.txt"
    rc=${PIPESTATUS[0]}
    echo "ansible-playbook $playbook: rc=$rc, wall $((SECONDS - start)) s" | tee -a "$OUT/$(basename "$playbook" .yml)-recap.txt"
    exit "$rc"
    ;;
  fleet)
    with_ansible
    start=$SECONDS
    python3 tools/fleet_report.py -i inventories/preinstalled --reports "$OUT/fleet" "$@" 2>&1 \
      | tee "$OUT/fleet-report.txt"
    rc=${PIPESTATUS[0]}
    echo "fleet_report: rc=$rc, wall $((SECONDS - start)) s" | tee -a "$OUT/fleet-report.txt"
    exit "$rc"
    ;;
  contention)
    play() {  # name playbook [ARGS]: one play, its recap and reports under $OUT/name
      local name=$1; shift
      OUT="$OUT/$name" "$0" play "$@" >/dev/null 2>&1
      echo "== $name: $(tail -1 "$OUT/$name/"*-recap.txt)"
      grep -hE "could not measure|is slow|failed the check|PASS|NOT MEASURED" "$OUT/$name/"*-recap.txt | cut -c1-400 | tail -4
    }
    load() {  # busy | memheld: start the other process and wait until nvidia-smi lists it
      python3 tools/device/contend.py "$@" >"$OUT/contend-$1.log" 2>&1 &
      LOAD=$!
      sleep 15
      nvidia-smi >"$OUT/smi-$1.txt"
    }
    play healthy playbooks/site.yml
    load busy
    play busy-measure playbooks/verify.yml -e gpu_check_busy_gpu=measure
    play busy-wait playbooks/verify.yml -e gpu_check_busy_wait=20
    kill "$LOAD"; wait "$LOAD" 2>/dev/null; sleep 3
    load memheld 74
    play memheld playbooks/verify.yml -e gpu_check_busy_wait=20
    kill "$LOAD"; wait "$LOAD" 2>/dev/null
    ;;
  *)
    echo "unknown action $what" >&2
    exit 2
    ;;
esac
