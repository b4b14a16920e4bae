"""gpu_required: false on a host without a GPU: the driver and CUDA stages skip themselves.

The preflight says so; this proves the stages do: they change nothing and never reach
for NVIDIA's repository (pointed here at a closed loopback port, so any attempt fails).
"""

from __future__ import annotations

from conftest import CONTAINER, one_line, run_playbook, snapshot, snapshot_diff

CLOSED = "http://127.0.0.1:9/compute/cuda/repos"


def test_driver_and_cuda_stages_skip_without_gpu(test_host):
    extra = {"gpu_required": False, "nvidia_driver_repo_base_url": CLOSED}
    before = snapshot()
    for playbook, words in (
        ("nvidia_driver.yml", f"nvidia_driver: skipped. {CONTAINER} has no NVIDIA GPU"),
        ("cuda.yml", f"cuda: skipped. {CONTAINER} has no NVIDIA GPU"),
    ):
        result = run_playbook(test_host, playbook, extra)
        output = one_line(result.stdout + result.stderr)
        assert result.returncode == 0, output[-3000:]
        assert words in output, output[-3000:]
        # Had a stage reached for the repository, it would have stopped "could not be reached".
        assert "could not be reached" not in output, output[-3000:]
    after = snapshot()
    assert before == after, snapshot_diff(before, after)
