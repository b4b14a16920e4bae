"""Where NVIDIA's cuDNN redistributable archive of a release is, and its sha256.

From cuDNN 8.5.0 NVIDIA publishes ``redistrib_<X.Y.Z>.json`` next to the archives: per
platform (linux-x86_64, linux-sbsa) and per ``cuda<major>`` variant, the archive's
``relative_path`` and ``sha256``. Older archives (8.4.0 for CUDA 11.6, the seed's) have
no manifest; the vendor catalogue lists them with their checksums. A manifest whose
sha256 disagrees with a checksum the catalogue knows from a second copy is refused.
Runs on target hosts: Python 3.8, standard library only.
"""

from __future__ import annotations

import posixpath
from typing import Any, Dict, Optional

from ansible.module_utils.gpu_compat import _mm, parse_version, version_cmp
from ansible.module_utils.vendor_catalogue import CATALOGUE

REDIST: Dict[str, Any] = CATALOGUE["cudnn_redist_info"]


class RedistError(ValueError):
    pass


def platform_for(arch: str) -> str:
    try:
        return REDIST["platforms"][arch]
    except KeyError:
        raise RedistError(
            f"cuDNN archives exist for {', '.join(sorted(REDIST['platforms']))}, not {arch}"
        ) from None


def release_label(version: str) -> str:
    """X.Y.Z of a cuDNN version ("9.14.0.64" -> "9.14.0")."""
    parts = parse_version(version)
    if len(parts) < 3:
        raise RedistError(f"cuDNN version {version!r} needs at least X.Y.Z, like 9.14.0")
    return ".".join(str(p) for p in parts[:3])


def has_manifest(version: str) -> bool:
    return version_cmp(release_label(version), REDIST["first_manifest"]) >= 0


def manifest_url(version: str, base_url: Optional[str] = None) -> str:
    base = (base_url or REDIST["manifest_base_url"]).rstrip("/") + "/"
    return f"{base}redistrib_{release_label(version)}.json"


def variant_for(version: str, cuda: str) -> str:
    """The ``cuda<major>`` variant, refused where the catalogue says no such build exists."""
    major = parse_version(cuda)[0]
    variant = f"cuda{major}"
    bounds = REDIST["cuda_variants"].get(variant)
    label = release_label(version)
    if bounds is None:
        raise RedistError(
            f"cuDNN has no {variant} archives (known: {', '.join(REDIST['cuda_variants'])})"
        )
    if bounds.get("first") and version_cmp(label, bounds["first"]) < 0:
        raise RedistError(
            f"cuDNN {label} has no archive for CUDA {major}: the first {variant} build is "
            f"{bounds['first']}; set cuda_cudnn_version to {bounds['first']} or newer"
        )
    if bounds.get("last") and version_cmp(label, bounds["last"]) > 0:
        raise RedistError(
            f"cuDNN {label} has no archive for CUDA {major}: the last {variant} build is "
            f"{bounds['last']}; set cuda_cudnn_version to {bounds['last']} or older"
        )
    return variant


def legacy_archive(version: str, cuda: str, arch: str) -> Dict[str, Any]:
    """A catalogued archive of a release that predates the manifests."""
    platform = platform_for(arch)
    want = parse_version(version)
    for row in REDIST["archives"]:
        full = parse_version(row["cudnn"])
        if full[: len(want)] == want and row["cuda"] == _mm(cuda) and row["platform"] == platform:
            return {
                "url": row["url"].rstrip("/") + "/" + row["name"],
                "name": row["name"],
                "sha256": row["sha256"],
                "version": row["cudnn"],
                "size": None,
                "from": "catalogue",
                "source": row["source"],
            }
    raise RedistError(
        f"cuDNN {version} predates NVIDIA's redist manifests ({REDIST['first_manifest']}) and the "
        f"catalogue lists no archive of it for CUDA {_mm(cuda)} on {platform}; set "
        "cuda_cudnn_tarball_url and cuda_cudnn_tarball_sha256, or choose a cuDNN >= "
        f"{REDIST['first_manifest']}"
    )


def known_sha256(version: str, variant: str, platform: str) -> Optional[str]:
    for row in REDIST["known_sha256"]:
        if row["cudnn"] == version and row["variant"] == variant and row["platform"] == platform:
            return row["sha256"]
    return None


def from_manifest(
    manifest: Dict[str, Any], version: str, cuda: str, arch: str, base_url: Optional[str] = None
) -> Dict[str, Any]:
    """The archive entry of a parsed redistrib_<X.Y.Z>.json for this CUDA and platform."""
    platform = platform_for(arch)
    variant = variant_for(version, cuda)
    component = manifest.get("cudnn")
    if not isinstance(component, dict):
        raise RedistError("the manifest has no 'cudnn' component")
    full = str(component.get("version") or "")
    want = parse_version(version)
    if not full or parse_version(full)[: len(want)] != want:
        raise RedistError(f"the manifest describes cuDNN {full or '?'}, not {version}")
    entry = (component.get(platform) or {}).get(variant)
    if not isinstance(entry, dict) or not entry.get("relative_path") or not entry.get("sha256"):
        offered = sorted(k for k in (component.get(platform) or {}) if k.startswith("cuda"))
        raise RedistError(
            f"cuDNN {full} has no {variant} archive for {platform} (the manifest offers "
            f"{', '.join(offered) or 'none'})"
        )
    sha = str(entry["sha256"]).lower()
    known = known_sha256(full, variant, platform)
    if known and known != sha:
        raise RedistError(
            f"the manifest's sha256 for {entry['relative_path']} is {sha}, but the vendor "
            f"catalogue knows {known} from a second copy of NVIDIA's manifest; refusing it"
        )
    base = (base_url or REDIST["manifest_base_url"]).rstrip("/") + "/"
    relative = str(entry["relative_path"]).lstrip("/")
    if ".." in relative.split("/"):
        raise RedistError(f"refusing the manifest's relative_path {relative!r}")
    return {
        "url": base + relative,
        "name": posixpath.basename(relative),
        "sha256": sha,
        "version": full,
        "size": int(entry["size"]) if str(entry.get("size", "")).isdigit() else None,
        "from": "manifest",
        "source": "NVIDIA " + manifest_url(version, base_url),
    }


def archive_top_dir(name: str) -> str:
    for suffix in (".tar.xz", ".tar.gz", ".tgz"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name
