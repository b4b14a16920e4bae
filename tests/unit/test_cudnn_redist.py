"""module_utils/cudnn_redist.py and library/cudnn_redist_info.py: NVIDIA's cuDNN archive and
its sha256.

The manifests here copy the structure of NVIDIA's redistrib_<X.Y.Z>.json (as served under
developer.download.nvidia.com/compute/cudnn/redist/). The 9.14.0.64 cuda13 / cuda12
linux-x86_64 checksums are the catalogue's known ones; the others are placeholders of the
right shape. The module test serves a manifest from a real HTTP server on 127.0.0.1.
"""

from __future__ import annotations

import copy
import functools
import http.server
import json
import threading

import cudnn_redist_info as cudnn_module
import pytest
from ansible.module_utils import cudnn_redist as cr
from ansible.module_utils.testing import patch_module_args

BASE = "https://developer.download.nvidia.com/compute/cudnn/redist/"
SHA_9_14_CUDA13 = "75b8c5feb7e65107dc8881af2cf245f9be77274f607c019a966347e36d1526e7"
SHA_9_14_CUDA12 = "fcaf904938b5bab4e782f4d064dd5b5fca7d9872a7f21a9491cf145634be4473"
SHA_8_4_X86 = "d19bdafd9800c79d29e6f6fffa9f9e2c10d1132d6c2ff10b1593e057e74dd050"


def _entry(platform, full, variant, sha256, size):
    return {
        "relative_path": f"cudnn/{platform}/cudnn-{platform}-{full}_{variant}-archive.tar.xz",
        "sha256": sha256,
        "md5": "0" * 32,
        "size": str(size),
    }


def manifest(full, platforms):
    """A redistrib_<X.Y.Z>.json: {platform: {variant: sha256}}."""
    component = {
        "name": "NVIDIA CUDA Deep Neural Network library",
        "license": "cudnn",
        "license_path": "cudnn/LICENSE.txt",
        "version": full,
        "cuda_variant": sorted({v.replace("cuda", "") for p in platforms.values() for v in p}),
    }
    for platform, variants in platforms.items():
        component[platform] = {
            variant: _entry(platform, full, variant, sha, 600_000_000 + i)
            for i, (variant, sha) in enumerate(variants.items())
        }
    return {
        "release_date": "2025-10-07",
        "release_label": ".".join(full.split(".")[:3]),
        "release_product": "cudnn",
        "cudnn": component,
    }


MANIFEST_9_14 = manifest(
    "9.14.0.64",
    {
        "linux-x86_64": {"cuda12": SHA_9_14_CUDA12, "cuda13": SHA_9_14_CUDA13},
        "linux-sbsa": {"cuda12": "1" * 64, "cuda13": "2" * 64},
    },
)
MANIFEST_9_13 = manifest(
    "9.13.0.50",
    {
        "linux-x86_64": {"cuda12": "3" * 64, "cuda13": "4" * 64},
        "linux-sbsa": {"cuda12": "5" * 64, "cuda13": "6" * 64},
    },
)


# ---------------------------------------------------------------------------
# from_manifest
# ---------------------------------------------------------------------------


def test_from_manifest_returns_url_name_and_sha256():
    found = cr.from_manifest(MANIFEST_9_14, "9.14.0", "13.0", "x86_64")
    name = "cudnn-linux-x86_64-9.14.0.64_cuda13-archive.tar.xz"
    assert found["url"] == BASE + "cudnn/linux-x86_64/" + name
    assert found["name"] == name
    assert found["name"].endswith("_cuda13-archive.tar.xz")  # the CUDA major only
    assert found["sha256"] == SHA_9_14_CUDA13
    assert found["version"] == "9.14.0.64"
    assert found["size"] == 600_000_001
    assert found["from"] == "manifest"
    assert found["source"] == "NVIDIA " + BASE + "redistrib_9.14.0.json"
    assert cr.archive_top_dir(found["name"]) == "cudnn-linux-x86_64-9.14.0.64_cuda13-archive"


def test_from_manifest_picks_the_cuda_major_and_platform():
    found = cr.from_manifest(MANIFEST_9_14, "9.14.0.64", "12.8", "x86_64")
    assert found["sha256"] == SHA_9_14_CUDA12
    assert found["name"].endswith("_cuda12-archive.tar.xz")
    sbsa = cr.from_manifest(MANIFEST_9_14, "9.14.0", "13.0.2", "sbsa", "http://mirror.local/cudnn")
    assert sbsa["url"] == (
        "http://mirror.local/cudnn/cudnn/linux-sbsa/cudnn-linux-sbsa-9.14.0.64_cuda13-archive.tar.xz"
    )
    assert sbsa["sha256"] == "2" * 64


def test_from_manifest_refuses_a_manifest_of_another_version():
    with pytest.raises(cr.RedistError, match=r"describes cuDNN 9\.13\.0\.50, not 9\.14\.0"):
        cr.from_manifest(MANIFEST_9_13, "9.14.0", "13.0", "x86_64")


def test_from_manifest_refuses_a_missing_variant_naming_what_it_offers():
    only12 = copy.deepcopy(MANIFEST_9_14)
    del only12["cudnn"]["linux-x86_64"]["cuda13"]
    with pytest.raises(cr.RedistError, match=r"no cuda13 archive for linux-x86_64.*offers cuda12"):
        cr.from_manifest(only12, "9.14.0", "13.0", "x86_64")


def test_from_manifest_refuses_a_sha256_the_catalogue_contradicts():
    tampered = copy.deepcopy(MANIFEST_9_14)
    tampered["cudnn"]["linux-x86_64"]["cuda13"]["sha256"] = "f" * 64
    with pytest.raises(cr.RedistError, match=f"catalogue knows {SHA_9_14_CUDA13}"):
        cr.from_manifest(tampered, "9.14.0", "13.0", "x86_64")


def test_from_manifest_accepts_an_upper_case_copy_of_the_known_sha256():
    upper = copy.deepcopy(MANIFEST_9_14)
    upper["cudnn"]["linux-x86_64"]["cuda13"]["sha256"] = SHA_9_14_CUDA13.upper()
    assert cr.from_manifest(upper, "9.14.0", "13.0", "x86_64")["sha256"] == SHA_9_14_CUDA13


@pytest.mark.parametrize(
    "relative", ["cudnn/../../../etc/passwd", "../cudnn.tar.xz", "/cudnn/../x.tar.xz"]
)
def test_from_manifest_refuses_a_path_that_climbs_out(relative):
    evil = copy.deepcopy(MANIFEST_9_13)
    evil["cudnn"]["linux-x86_64"]["cuda13"]["relative_path"] = relative
    with pytest.raises(cr.RedistError, match="refusing the manifest's relative_path"):
        cr.from_manifest(evil, "9.13.0", "13.0", "x86_64")


def test_from_manifest_without_a_cudnn_component():
    with pytest.raises(cr.RedistError, match="no 'cudnn' component"):
        cr.from_manifest({"release_label": "9.14.0"}, "9.14.0", "13.0", "x86_64")


# ---------------------------------------------------------------------------
# variant_for, legacy_archive, has_manifest
# ---------------------------------------------------------------------------


def test_variant_for_refuses_cuda13_before_9_12():
    with pytest.raises(cr.RedistError, match=r"first cuda13 build is 9\.12\.0"):
        cr.variant_for("9.10.2", "13.0")
    assert cr.variant_for("9.12.0", "13.0") == "cuda13"


def test_variant_for_refuses_cuda11_after_9_10_2():
    with pytest.raises(cr.RedistError, match=r"last cuda11 build is 9\.10\.2"):
        cr.variant_for("9.14.0", "11.8")
    assert cr.variant_for("9.10.2.21", "11.8") == "cuda11"


def test_variant_for_an_unknown_major():
    with pytest.raises(cr.RedistError, match="no cuda10 archives"):
        cr.variant_for("9.14.0", "10.2")


def test_legacy_archive_for_the_seed():
    found = cr.legacy_archive("8.4.0", "11.6", "x86_64")
    assert found["url"] == (
        "https://developer.download.nvidia.com/compute/redist/cudnn/v8.4.0/local_installers/11.6/"
        "cudnn-linux-x86_64-8.4.0.27_cuda11.6-archive.tar.xz"
    )
    assert found["sha256"] == SHA_8_4_X86
    assert found["version"] == "8.4.0.27"
    assert found["from"] == "catalogue"
    assert cr.legacy_archive("8.4.0.27", "11.6.2", "sbsa")["name"] == (
        "cudnn-linux-sbsa-8.4.0.27_cuda11.6-archive.tar.xz"
    )


@pytest.mark.parametrize(("version", "cuda"), [("8.3.0", "11.6"), ("8.4.0", "11.7")])
def test_legacy_archive_not_in_the_catalogue_names_the_tarball_variables(version, cuda):
    with pytest.raises(cr.RedistError, match="cuda_cudnn_tarball_url"):
        cr.legacy_archive(version, cuda, "x86_64")


def test_legacy_archive_for_an_unknown_arch():
    with pytest.raises(cr.RedistError, match="not ppc64le"):
        cr.legacy_archive("8.4.0", "11.6", "ppc64le")


def test_has_manifest_from_8_5_0():
    assert cr.has_manifest("8.4.0") is False
    assert cr.has_manifest("8.4.1.50") is False
    assert cr.has_manifest("8.5.0") is True
    assert cr.has_manifest("9.14.0.64") is True
    with pytest.raises(cr.RedistError, match=r"needs at least X\.Y\.Z"):
        cr.has_manifest("9.14")


def test_manifest_url():
    assert cr.manifest_url("9.14.0.64") == BASE + "redistrib_9.14.0.json"
    assert cr.manifest_url("9.13.0", "http://m/x/") == "http://m/x/redistrib_9.13.0.json"


# ---------------------------------------------------------------------------
# library/cudnn_redist_info.py against a real HTTP server
# ---------------------------------------------------------------------------


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def redist_server(tmp_path, monkeypatch):
    for var in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    served = tmp_path / "redist"
    served.mkdir()
    (served / "redistrib_9.13.0.json").write_text(json.dumps(MANIFEST_9_13))
    (served / "redistrib_9.11.0.json").write_text("<html>not json</html>")
    handler = functools.partial(_QuietHandler, directory=str(served))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()
    thread.join(5)


def run_module(args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        cudnn_module.main()
    return exc.value.code != 0, json.loads(capsys.readouterr().out)


def test_module_reads_the_manifest_from_the_server(redist_server, capsys):
    failed, result = run_module(
        {"version": "9.13.0", "cuda_version": "13.0", "base_url": redist_server, "timeout": 5},
        capsys,
    )
    assert not failed, result
    name = "cudnn-linux-x86_64-9.13.0.50_cuda13-archive.tar.xz"
    assert result["url"] == f"{redist_server}cudnn/linux-x86_64/{name}"
    assert result["sha256"] == "4" * 64
    assert result["name"] == name
    assert result["top_dir"] == "cudnn-linux-x86_64-9.13.0.50_cuda13-archive"
    assert result["version"] == "9.13.0.50"
    assert result["from"] == "manifest"
    assert result["changed"] is False


def test_module_fails_naming_the_url_on_404(redist_server, capsys):
    failed, result = run_module(
        {"version": "9.14.0", "cuda_version": "13.0", "base_url": redist_server, "timeout": 5},
        capsys,
    )
    assert failed
    assert f"{redist_server}redistrib_9.14.0.json" in result["msg"]
    assert "404" in result["msg"]
    assert "cuda_cudnn_redist_base_url" in result["msg"]


def test_module_fails_on_a_manifest_that_is_not_json(redist_server, capsys):
    failed, result = run_module(
        {"version": "9.11.0", "cuda_version": "12.8", "base_url": redist_server, "timeout": 5},
        capsys,
    )
    assert failed
    assert result["msg"].startswith(f"{redist_server}redistrib_9.11.0.json is not JSON")


def test_module_refusal_from_the_manifest_is_reported(redist_server, capsys):
    failed, result = run_module(
        {"version": "9.13.0", "cuda_version": "11.8", "base_url": redist_server, "timeout": 5},
        capsys,
    )
    assert failed
    assert result["msg"].startswith("cuDNN 9.13.0 for CUDA 11.8: ")
    assert "last cuda11 build is 9.10.2" in result["msg"]


def test_module_uses_the_catalogue_before_8_5_without_a_request(capsys, monkeypatch):
    def no_network(*args, **kwargs):
        raise AssertionError("no manifest exists before 8.5.0; nothing may be fetched")

    monkeypatch.setattr(cudnn_module, "fetch_url", no_network)
    failed, result = run_module({"version": "8.4.0", "cuda_version": "11.6"}, capsys)
    assert not failed, result
    assert result["sha256"] == SHA_8_4_X86
    assert result["top_dir"] == "cudnn-linux-x86_64-8.4.0.27_cuda11.6-archive"
    assert result["from"] == "catalogue"
