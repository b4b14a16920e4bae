"""The catalogue of bad inputs: each is refused before anything on the host changes.

Every case names the playbook it runs, the variables it sets, and the exact words the
user must see. tests/reliability/test_bad_inputs.py runs each against a fresh Debian 12
test host and compares the host's state before and after; docs/RELIABILITY.md is
rendered from this list (a test keeps it in step).
"""

from __future__ import annotations

from typing import Dict, List, Optional

FIXTURE = "{fixture}"  # replaced by the fixture server's URL at run time

CASES: List[Dict[str, object]] = [
    # --- wrong types and unknown choices, caught by meta/argument_specs.yml
    {
        "id": "nouveau-policy-choice",
        "input": "nouveau_reboot_policy: sometimes",
        "playbook": "nouveau.yml",
        "vars": {"nouveau_reboot_policy": "sometimes"},
        "expect": "value of nouveau_reboot_policy must be one of: never, auto, always, got: sometimes",
    },
    {
        "id": "nouveau-bool-type",
        "input": "nouveau_blacklist_enabled: maybe",
        "playbook": "nouveau.yml",
        "vars": {"nouveau_blacklist_enabled": "maybe"},
        "expect": "argument 'nouveau_blacklist_enabled' is of type str and we were unable to convert to bool",
    },
    {
        "id": "nouveau-modprobe-path",
        "input": "nouveau_modprobe_file: /etc/nouveau.txt",
        "playbook": "nouveau.yml",
        "vars": {"nouveau_modprobe_file": "/etc/nouveau.txt"},
        "expect": "nouveau_modprobe_file is '/etc/nouveau.txt', but modprobe only reads /etc/modprobe.d/*.conf",
    },
    {
        "id": "gpu-check-profile-choice",
        "input": "gpu_check_profile: huge",
        "playbook": "verify.yml",
        "vars": {"gpu_check_profile": "huge"},
        "expect": "value of gpu_check_profile must be one of: quick, full, got: huge",
    },
    {
        "id": "gpu-check-tolerance-range",
        "input": "gpu_check_tolerance: 1.5",
        "playbook": "verify.yml",
        "vars": {"gpu_check_tolerance": 1.5},
        "expect": "gpu_check_tolerance is 1.5; it is the fraction of the reference img/s a mode must reach",
    },
    {
        "id": "gpu-check-nccl-debug-choice",
        "input": "gpu_check_nccl_debug: LOUD",
        "playbook": "verify.yml",
        "vars": {"gpu_check_nccl_debug": "LOUD"},
        "expect": "value of gpu_check_nccl_debug must be one of: VERSION, WARN, INFO, TRACE, got: LOUD",
    },
    {
        "id": "site-lock-wait-type",
        "input": "site_lock_wait_seconds: soon",
        "playbook": "site.yml",
        "vars": {"site_lock_wait_seconds": "soon"},
        "expect": "argument 'site_lock_wait_seconds' is of type str and we were unable to convert to int",
    },
    {
        "id": "driver-install-method-choice",
        "input": "nvidia_driver_install_method: runfile",
        "playbook": "nvidia_driver.yml",
        "vars": {"nvidia_driver_install_method": "runfile"},
        "expect": "value of nvidia_driver_install_method must be one of: cuda_repo, distro, got: runfile",
    },
    {
        "id": "cudnn-install-method-choice",
        "input": "cuda_cudnn_install_method: zip",
        "playbook": "cuda.yml",
        "vars": {"cuda_cudnn_install_method": "zip"},
        "expect": "value of cuda_cudnn_install_method must be one of: apt, tarball, got: zip",
    },
    {
        "id": "jupyter-port-type",
        "input": "jupyter_port: eighty",
        "playbook": "jupyter.yml",
        "vars": {"jupyter_port": "eighty"},
        "expect": "argument 'jupyter_port' is of type str and we were unable to convert to int",
    },
    {
        "id": "jupyter-open-bind-without-tls",
        "input": "jupyter_ip: 0.0.0.0 with no TLS certificate and no acknowledgement",
        "playbook": "jupyter.yml",
        "vars": {"jupyter_ip": "0.0.0.0"},
        "expect": "jupyter_ip 0.0.0.0 is not a loopback address: anyone who reaches 0.0.0.0:8888 would talk to a server that runs code. Keep the default 127.0.0.1 and use `ssh -N -L 8888:localhost:8888 user@host`, or set jupyter_tls_cert and jupyter_tls_key (both), or jupyter_allow_insecure_bind: true.",
    },
    {
        "id": "miniforge-sha256-malformed",
        "input": "conda_pytorch_miniforge_sha256 that is not 64 hex digits",
        "playbook": "conda_pytorch.yml",
        "vars": {"conda_pytorch_miniforge_sha256": {"x86_64": "not-a-checksum", "aarch64": "zz"}},
        "expect": "conda_pytorch_miniforge_sha256 has no sha256 for x86_64 (Miniforge 26.1.1-3). Add the hex digest from the release's Miniforge3-26.1.1-3-Linux-x86_64.sh.sha256 file.",
    },
    {
        "id": "dcgm-image-latest",
        "input": "dcgm_exporter_image_tag: latest",
        "playbook": "dcgm_exporter.yml",
        "vars": {"dcgm_exporter_image_tag": "latest"},
        "expect": "dcgm_exporter_image_tag must be an exact tag such as 4.5.3-4.8.2-ubuntu22.04, never empty or \"latest\" (got 'latest')",
    },
    {
        "id": "dcgm-key-fingerprint-malformed",
        "input": "dcgm_exporter_nvidia_repo_key_fingerprint: F796ECB0 (a short key id)",
        "playbook": "dcgm_exporter.yml",
        "vars": {"dcgm_exporter_nvidia_repo_key_fingerprint": "F796ECB0"},
        "expect": "dcgm_exporter_nvidia_repo_key_fingerprint is 'F796ECB0'; give the key's full fingerprint, 40 hex digits",
    },
    {
        "id": "dcgm-key-fingerprint-wrong",
        "input": "the NVIDIA Container Toolkit key URL serves a key other than the expected one",
        "playbook": "dcgm_exporter.yml",
        "vars": {
            "dcgm_exporter_mode": "container",
            "dcgm_exporter_docker_source": "distro",
            "dcgm_exporter_image_digest": "sha256:" + "0" * 64,
            "dcgm_exporter_nvidia_repo_url": f"{FIXTURE}/compute/cuda/repos/debian12/x86_64/",
            "dcgm_exporter_nvidia_repo_key_url": f"{FIXTURE}/keys/wrong-archive-keyring.gpg",
        },
        "expect": "expected C95B321B61E88C1809C4F759DDCAE044F796ECB0 (dcgm_exporter_nvidia_repo_key_fingerprint). It was not installed and apt was not told to trust it.",
    },
    {
        "id": "conda-channel-after-2.5",
        "input": "conda_pytorch_install_method: conda with torch 2.11.0",
        "playbook": "conda_pytorch.yml",
        "vars": {
            "conda_pytorch_install_method": "conda",
            "conda_pytorch_version": "2.11.0",
            "conda_pytorch_cuda_variant": "cu130",
            "conda_pytorch_python_version": "3.12",
        },
        "expect": "the pytorch conda channel stopped receiving releases after 2.5 (pytorch/pytorch#138506), so torch 2.11.0 comes only as wheels - set conda_pytorch_install_method to pip.",
    },
    # --- host and inventory
    {
        "id": "no-gpu",
        "input": "a host without an NVIDIA GPU, gpu_required left true",
        "playbook": "preflight.yml",
        "vars": {},
        "expect": "No NVIDIA GPU found on kindling-reliability: no PCI display controller with vendor 10de",
    },
    {
        "id": "unsupported-os",
        "input": "a distribution outside gpu_preflight_supported_os",
        "playbook": "preflight.yml",
        "vars": {"gpu_required": False, "gpu_preflight_supported_os": {"Ubuntu": ["24.04"]}},
        "expect": "is not supported. Kindling supports Ubuntu 24.04.",
    },
    {
        "id": "empty-inventory-group",
        "input": "an inventory whose gpu_hosts group has no hosts",
        "playbook": "site.yml",
        "vars": {},
        "inventory": "empty",
        "expect": "The inventory group gpu_hosts has no hosts",
    },
    # --- stacks that can't work, caught by the compatibility matrix before any change
    {
        "id": "driver-470-cuda-11.6",
        "input": "nvidia_driver_branch 470 with cuda_version 11.6 (the seed's pairing)",
        "playbook": "preflight.yml",
        "vars": {"gpu_required": False, "nvidia_driver_branch": "470", "cuda_version": "11.6"},
        "expect": "Driver 470 is too old for CUDA 11.6, which needs Linux driver >= 510.39.01",
    },
    {
        "id": "cuda-does-not-exist",
        "input": "cuda_version 11.9 (there is no CUDA 11.9)",
        "playbook": "preflight.yml",
        "vars": {"gpu_required": False, "cuda_version": "11.9"},
        "expect": "CUDA 11.9 is not in the compatibility table (known: 11.0 to 13.2; there is no "
        "12.7); set cuda_version to a released toolkit such as 11.8.",
    },
    {
        "id": "torch-no-wheel-for-variant",
        "input": "conda_pytorch_version 2.11.0 with conda_pytorch_cuda_variant cu116",
        "playbook": "preflight.yml",
        "vars": {
            "gpu_required": False,
            "conda_pytorch_version": "2.11.0",
            "conda_pytorch_cuda_variant": "cu116",
        },
        "expect": "torch 2.11.0 has no cu116 wheel (it ships cu126, cu128, cu130); set "
        "conda_pytorch_cuda_variant to cu130.",
    },
    {
        "id": "python-unsupported-by-torch",
        "input": "conda_pytorch_python_version 3.7 with torch 2.11.0",
        "playbook": "preflight.yml",
        "vars": {
            "gpu_required": False,
            "conda_pytorch_version": "2.11.0",
            "conda_pytorch_cuda_variant": "cu130",
            "conda_pytorch_python_version": "3.7",
        },
        "expect": "torch 2.11.0 has wheels for Python 3.10 to 3.14, not 3.7; set "
        "conda_pytorch_python_version to 3.10",
    },
    {
        "id": "cudnn-cuda-mismatch",
        "input": "cuda_cudnn_version 8.4.0 with cuda_version 13.0",
        "playbook": "preflight.yml",
        "vars": {
            "gpu_required": False,
            "cuda_version": "13.0",
            "cuda_cudnn_version": "8.4.0",
            "nvidia_driver_branch": "580",
        },
        "expect": "cuDNN 8.4.0 does not match CUDA 13.0: cuDNN 8 has builds for CUDA 10.2 to 12.x "
        "only",
    },
    # --- plans NVIDIA's repository for the host's OS does not serve (the vendor catalogue)
    {
        "id": "seed-stack-on-ubuntu2204",
        "input": "the seed stack (driver 510, CUDA 11.6, cuDNN 8.4.0) through site.yml, repository ubuntu2204",
        "playbook": "site.yml",
        "vars": {
            "gpu_required": False,
            "nvidia_driver_skip_without_gpu": False,
            "cuda_skip_without_gpu": False,
            "nvidia_driver_repo_distro": "ubuntu2204",
            "nvidia_driver_branch": "510",
            "cuda_version": "11.6",
            "cuda_cudnn_version": "8.4.0",
        },
        "expect": "CUDA 11.6 is not in ubuntu2204 (NVIDIA's repository for Ubuntu 22.04 serves CUDA "
        "11.7 to current); use 11.7+ here, or Ubuntu 20.04.",
        "changed_zero": True,
    },
]

# Faults, check mode and exposure. Each names the test that proves it; the ones in
# tests/reliability run in this suite, the Molecule ones in `make molecule`.
FAULTS_TEST = "tests/reliability/test_faults.py"
FAULTS: List[Dict[str, str]] = [
    {
        "id": "dpkg-interrupted",
        "input": "the driver install killed while dpkg runs the driver's postinst (the DKMS build), controller and dpkg both",
        "expect": "dpkg is left half-configured; the next run finishes it with dpkg --configure -a (and says so), installs and holds the driver; the run after that reports changed=0",
        "test": f"{FAULTS_TEST}::test_install_killed_mid_dpkg_is_repaired_by_the_next_run",
    },
    {
        "id": "repo-unreachable-fresh",
        "input": "the CUDA repository does not answer, on a fresh host",
        "expect": "stops at once naming the URL (The CUDA repository URL could not be reached); the host snapshot is unchanged",
        "test": f"{FAULTS_TEST}::test_unreachable_repository_on_a_fresh_host_changes_nothing",
    },
    {
        "id": "repo-unreachable-converged",
        "input": "the CUDA repository does not answer, on a host already set up",
        "expect": "same message; sources, keyrings and packages unchanged; apt-get update and installs from the working sources still work",
        "test": f"{FAULTS_TEST}::test_unreachable_repository_on_a_converged_host_keeps_the_working_sources",
    },
    {
        "id": "rotated-key-no-pubkey",
        "input": "the repository signed by a key the host does not trust (a real apt NO_PUBKEY, as after NVIDIA's 2022 rotation)",
        "expect": "the new source is tried in a scratch directory first; apt's NO_PUBKEY is shown with the fix; apt's sources and keyrings unchanged, apt-get update still clean",
        "test": f"{FAULTS_TEST}::test_rotated_repository_key_no_pubkey_changes_nothing",
    },
    {
        "id": "wrong-key-fingerprint",
        "input": "a repository key whose fingerprint is not the expected one",
        "expect": "refused before apt trusts it; no sources, keyring or packages left behind",
        "test": "molecule/driver_cuda_bad_input",
    },
    {
        "id": "tampered-download",
        "input": "the cuDNN tarball with a wrong sha256",
        "expect": "refused, the partial file removed, nothing installed",
        "test": "molecule/driver_cuda_bad_input",
    },
    {
        "id": "dpkg-lock-held",
        "input": "dpkg's locks held by another process (named like unattended-upgrades) for longer than nvidia_driver_apt_lock_timeout (10 s)",
        "expect": "waits the 10 s, then fails naming the lock, the holder's pid and command and the variable to raise; the host snapshot is unchanged",
        "test": f"{FAULTS_TEST}::test_held_dpkg_lock_waits_for_the_timeout_then_fails_naming_the_holder",
    },
    {
        "id": "dpkg-lock-released",
        "input": "dpkg's locks held for 45 s from before the run starts, timeout 120 s",
        "expect": "the run waits (the module reports seconds waited), then carries on and converges (changed=0)",
        "test": f"{FAULTS_TEST}::test_dpkg_lock_released_within_the_timeout_is_waited_for",
    },
    {
        "id": "held-driver-vs-upgrades",
        "input": "a newer 535 point release published; apt-get upgrade, then unattended-upgrade allowed the repository's origin",
        "expect": "the held driver stays at 535.183.01-1 (the candidate is 535.216.03-1); an unheld package from the same repository is upgraded by both, so they did run",
        "test": f"{FAULTS_TEST}::test_held_driver_survives_apt_get_upgrade_and_unattended_upgrade",
    },
    {
        "id": "held-driver-vs-branch-switch",
        "input": "apt-get upgrade and a manual apt install of another branch, on a host with branch 510 held",
        "expect": "the installed driver version does not move; a branch change happens only through nvidia_driver_branch",
        "test": "molecule/nvidia_driver_upgrade (prepare.yml, tests/test_upgrade.py)",
    },
    {
        "id": "concurrent-runs",
        "input": "two site runs against the same host at once",
        "expect": "the second refuses, naming the run that holds the lock, or waits with site_lock_wait_seconds; they never interleave",
        "test": "tests/unit/test_site_lock.py",
    },
    {
        "id": "dead-run-lock",
        "input": "a run killed mid-way left its lock",
        "expect": "the next run from the same controller takes it over with a warning; from another controller after site_lock_stale_after or with site_lock_break",
        "test": "tests/unit/test_site_lock.py",
    },
]

CHECKS: List[Dict[str, str]] = [
    {
        "id": "check-mode-site-fresh-host",
        "input": "ansible-playbook playbooks/site.yml --check --diff on a fresh Debian 12 host (the default scenario's variables)",
        "expect": "succeeds, reports the changes it would make (driver packages, repository entry, venv, Jupyter), and the host snapshot is unchanged",
        "test": "tests/reliability/test_check_mode.py",
    },
    {
        "id": "check-mode-per-stage",
        "input": "--check of the driver, cuda, jupyter and dcgm_exporter stages on fresh hosts",
        "expect": "each succeeds and reports what it would do",
        "test": "molecule/nvidia_driver, molecule/cuda (check step), molecule/jupyter, molecule/dcgm_exporter (prepare.yml)",
    },
    {
        "id": "gpu-stages-skip-without-gpu",
        "input": "the driver and cuda stages with gpu_required: false on a host without a GPU, NVIDIA's repository pointed at a closed port",
        "expect": "both succeed, each saying it skipped itself and why; the repository is never contacted and the host snapshot is unchanged",
        "test": "tests/reliability/test_gpu_stages_skip.py",
    },
    {
        "id": "idempotence-every-scenario",
        "input": "a second converge of every Molecule scenario",
        "expect": "changed=0 (Molecule's idempotence step, present in every scenario's sequence)",
        "test": "molecule/* idempotence; tests/unit/test_molecule_scenarios.py",
    },
]

EXPOSURE: List[Dict[str, str]] = [
    {
        "id": "loopback-only",
        "input": "the whole of site.yml with default variables",
        "expect": "every listening TCP socket of the stack is on 127.0.0.1 or ::1",
        "test": "molecule/default/tests/test_site.py",
    },
    {
        "id": "jupyter-token-secret",
        "input": "the generated Jupyter token",
        "expect": "root-only file (0600); not in the journal; in no world-readable file",
        "test": "molecule/default/tests/test_site.py, molecule/jupyter",
    },
    {
        "id": "jupyter-token-not-in-ansible-output",
        "input": "the Jupyter converge and idempotence runs at verbosity 3 (-vvv, module arguments shown)",
        "expect": "the token appears nowhere in Ansible's output",
        "test": "molecule/jupyter/tests/test_jupyter.py",
    },
    {
        "id": "downloads-verified",
        "input": "every download: apt repositories, the cuDNN tarball, the Miniforge installer, wheels",
        "expect": "signed repositories trusted through signed-by keyrings with checked fingerprints; files by sha256 (a wrong one is refused: tampered-download, miniforge-sha256-malformed)",
        "test": "molecule/driver_cuda_bad_input, tests/reliability/test_bad_inputs.py",
    },
    {
        "id": "systemd-hardening",
        "input": "systemd-analyze security of the units Kindling writes",
        "expect": "each unit's exposure score is at or below its threshold and equals the one recorded in docs/SYSTEMD_HARDENING.md",
        "test": "molecule/jupyter/tests/test_jupyter.py, molecule/dcgm_exporter/tests/test_dcgm_exporter.py",
    },
]

SECTIONS = [
    ("Faults, each followed by a run that converges", FAULTS),
    ("Check mode and idempotence", CHECKS),
    ("Secrets and exposure", EXPOSURE),
]


def case_count() -> int:
    return len(CASES) + sum(len(rows) for _, rows in SECTIONS)


def render_markdown(results: Optional[Dict[str, str]] = None) -> str:
    """docs/RELIABILITY.md, from the lists above.

    results maps a case id to the outcome of a run (tests/reliability/conftest.py writes a
    copy with this run's outcomes to reports/reliability/); the committed doc shows "pass",
    which CI holds true: a failing row keeps a change from landing.
    """

    def result(case_id: str) -> str:
        return (results or {}).get(case_id, "pass")

    lines = [
        "# Reliability and security cases",
        "",
        "Generated from `tests/reliability/cases.py` (`python tests/reliability/cases.py`); a",
        "test fails when this file is out of step with it. Every row is proved by the test it",
        "names, which runs in `make test` (CI); a row whose test fails keeps the change from",
        "landing, so the result column of this committed copy is `pass`. Each run of",
        "`make reliability` also writes `reports/reliability/RELIABILITY.md` with that run's",
        "own outcomes of the tests/reliability rows.",
        "",
        f"{case_count()} cases in all.",
        "",
        f"## Bad inputs ({len(CASES)} cases)",
        "",
        "Each runs against a fresh Debian 12 test host; the test asserts the exact message and",
        "that a snapshot of the host (files under /etc/apt, /etc/modprobe.d, /usr/local, /opt,",
        "/var/lib/kindling and more, the package list, holds, users and unit files) is the same",
        "before and after.",
        "",
        "| case | input | the user sees | test | result |",
        "|---|---|---|---|---|",
    ]
    for case in CASES:
        expect = str(case["expect"]).replace("|", "\\|")
        lines.append(
            f"| {case['id']} | {case['input']} | {expect} "
            f"| tests/reliability/test_bad_inputs.py[{case['id']}] | {result(str(case['id']))} |"
        )
    for title, rows in SECTIONS:
        lines += [
            "",
            f"## {title} ({len(rows)} cases)",
            "",
            "| case | input or fault | expected behaviour | test | result |",
            "|---|---|---|---|---|",
        ]
        for case in rows:
            lines.append(
                f"| {case['id']} | {case['input']} | {case['expect']} | {case['test']} "
                f"| {result(case['id'])} |"
            )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    import pathlib

    out = pathlib.Path(__file__).resolve().parents[2] / "docs" / "RELIABILITY.md"
    out.write_text(render_markdown())
    print(f"wrote {out} ({case_count()} cases)")
