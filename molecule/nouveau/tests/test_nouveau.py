"""Verify the nouveau role on the Molecule test host (testinfra)."""

import json

BLACKLIST = "/etc/modprobe.d/blacklist-nouveau.conf"


def test_blacklist_file_contents(host):
    f = host.file(BLACKLIST)
    assert f.exists and f.is_file
    assert f.user == "root" and f.group == "root"
    assert f.mode == 0o644
    lines = [ln.strip() for ln in f.content_string.splitlines() if not ln.startswith("#")]
    assert "blacklist nouveau" in lines
    assert "options nouveau modeset=0" in lines


def test_modprobe_sees_the_blacklist(host):
    config = host.check_output("modprobe --showconfig")
    assert "blacklist nouveau" in config.splitlines()
    assert "options nouveau modeset=0" in config.splitlines()


def test_handler_rebuilt_the_initramfs_with_the_blacklist(host):
    # prepare.yml proved the image's initramfs lacked the file; only the handler adds it.
    initrds = host.check_output("ls /boot/initrd.img-*").split()
    assert initrds
    for initrd in initrds:
        listing = host.check_output(f"lsinitramfs {initrd}")
        assert "etc/modprobe.d/blacklist-nouveau.conf" in listing.splitlines()


def test_loaded_nouveau_records_one_pending_reboot(host):
    # side_effect.yml made nouveau look loaded with policy auto: a container is never
    # rebooted, so the request must be recorded with its reason.
    record = host.file("/var/lib/kindling/reboot-required.json")
    assert record.exists
    data = json.loads(record.content_string)
    assert data["boot_id"] == host.file("/proc/sys/kernel/random/boot_id").content_string.strip()
    assert [r["role"] for r in data["requests"]] == ["nouveau"]
    assert data["requests"][0]["policy"] == "auto"
    assert "could not be unloaded" in data["requests"][0]["reason"]
    assert host.run("systemctl is-system-running").stdout.strip() in ("running", "degraded")
