"""The multi-node all-reduce program, run for real as two torchrun nodes on this host.

Two separate `torchrun --nnodes 2` agents (node ranks 0 and 1) rendezvous on
127.0.0.1 and all-reduce with the gloo backend on the CPU: the same code path that runs
with NCCL across the hosts of a GPU group, where the first host is the rendezvous.
"""

from __future__ import annotations

import importlib.util
import json
import socket
import subprocess
import sys

import pytest
from conftest import REPO_ROOT

PROGRAM = REPO_ROOT / "roles" / "gpu_check" / "files" / "allreduce_bench.py"
spec = importlib.util.spec_from_file_location("allreduce_bench", PROGRAM)
allreduce_bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(allreduce_bench)


def test_bus_bandwidth_is_nccl_tests_formula():
    assert allreduce_bench.bus_bandwidth(100.0, 8) == pytest.approx(175.0)
    assert allreduce_bench.bus_bandwidth(100.0, 2) == pytest.approx(100.0)
    assert allreduce_bench.bus_bandwidth(100.0, 1) == 0.0
    with pytest.raises(ValueError):
        allreduce_bench.bus_bandwidth(1.0, 0)


def test_refuses_to_run_outside_torchrun():
    result = subprocess.run(
        [sys.executable, str(PROGRAM)],
        capture_output=True,
        text=True,
        check=False,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 2
    assert "start me with torchrun" in result.stderr


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_two_nodes_all_reduce_with_gloo(tmp_path):
    port = _free_port()
    out = tmp_path / "allreduce.json"
    nodes = []
    for node_rank in (0, 1):
        cmd = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nnodes",
            "2",
            "--node-rank",
            str(node_rank),
            "--nproc-per-node",
            "1",
            "--master-addr",
            "127.0.0.1",
            "--master-port",
            str(port),
            str(PROGRAM),
            "--backend",
            "gloo",
            "--sizes",
            "64K,1M",
            "--warmup",
            "1",
            "--iters",
            "3",
            "--timeout",
            "60",
            "--output",
            str(out),
        ]
        nodes.append(
            subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        )
    outputs = [n.communicate(timeout=180)[0] for n in nodes]
    assert [n.returncode for n in nodes] == [0, 0], outputs
    report = json.loads(out.read_text())
    assert report["backend"] == "gloo" and report["world_size"] == 2 and report["nodes"] == 2
    assert [s["bytes"] for s in report["sizes"]] == [65536, 1 << 20]
    for size in report["sizes"]:
        assert size["algbw_gb_s"] > 0
        assert size["busbw_gb_s"] == pytest.approx(size["algbw_gb_s"])  # 2(n-1)/n = 1 for n=2
    assert report["peak_busbw_gb_s"] == max(s["busbw_gb_s"] for s in report["sizes"])


@pytest.mark.slow
def test_ansible_runs_one_job_across_two_hosts(tmp_path):
    """roles/gpu_check/tasks/multinode.yml for an N-host group, here N=2 local hosts.

    Both inventory hosts use the local connection, so their torchrun agents meet on
    127.0.0.1 with the gloo backend; on GPU hosts the same tasks use NCCL and the first
    host's address.
    """
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(
        "all:\n  hosts:\n"
        + "".join(
            f"    node{i}:\n      ansible_connection: local\n"
            f"      ansible_python_interpreter: {sys.executable}\n"
            for i in (0, 1)
        )
    )
    playbook = tmp_path / "multinode.yml"
    playbook.write_text(
        f"""- hosts: all
  gather_facts: true
  vars:
    gpu_check_device: cpu
    gpu_check_python: {sys.executable}
    gpu_check_install_dir: {tmp_path}/bin
    gpu_check_host_report_dir: {tmp_path}/report/{{{{ inventory_hostname }}}}
    gpu_check_multinode_master_addr: 127.0.0.1
    gpu_check_multinode_port: {_free_port()}
    gpu_check_multinode_sizes: 64K,1M
    gpu_check_multinode_timeout: 60
    gpu_check_nccl_socket_ifname: lo
  tasks:
    - ansible.builtin.include_role:
        name: gpu_check
        tasks_from: multinode.yml
"""
    )
    result = subprocess.run(
        [
            str(REPO_ROOT / ".venv" / "bin" / "ansible-playbook"),
            "-i",
            str(inventory),
            str(playbook),
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "all-reduce over 2 processes on 2 hosts (gloo): peak bus bandwidth" in result.stdout
    report = json.loads((tmp_path / "report" / "node0" / "allreduce.json").read_text())
    assert report["world_size"] == 2 and report["nccl_socket_ifname"] == "lo"
    assert not (tmp_path / "report" / "node1" / "allreduce.json").exists()
