#!/usr/bin/env bash
# Build the Molecule test-host image: Debian 12 with systemd as PID 1.
# No container registry is reachable from the build machines, so the root file system
# is made from Debian's mirror with mmdebstrap and imported into podman. The image is
# tagged with a hash of this script, so a changed package list rebuilds it and an
# unchanged one is reused (a few milliseconds).
set -euo pipefail
IMAGE=${KINDLING_TEST_IMAGE:-localhost/kindling-debian12-systemd}
MIRROR=${KINDLING_DEBIAN_MIRROR:-http://deb.debian.org/debian}
here=$(cd "$(dirname "$0")" && pwd)
stamp=$(sha256sum "$here/build-image.sh" | cut -c1-12)

if podman image exists "$IMAGE:$stamp"; then
  podman tag "$IMAGE:$stamp" "$IMAGE:latest"
  echo "test image $IMAGE:$stamp is up to date"
  exit 0
fi

# What a fresh cloud image has, plus what Ansible and the tests need:
# python3-apt for ansible.builtin.apt, kmod for modprobe/lsmod, initramfs-tools and a
# kernel image so the nouveau role's initramfs handler does real work, iproute2 for ss.
# unattended-upgrades, as on Ubuntu's and Debian's cloud images: the fault tests prove a held
# driver survives it and that the roles wait for its dpkg lock.
packages=(
  systemd systemd-sysv dbus python3 python3-apt sudo ca-certificates gnupg
  kmod initramfs-tools linux-image-amd64 iproute2 procps curl lsb-release pciutils
  unattended-upgrades
)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "building $IMAGE:$stamp from $MIRROR (about a minute)"
mmdebstrap --variant=apt --include="$(IFS=,; echo "${packages[*]}")" \
  --customize-hook='chroot "$1" systemctl mask getty@tty1.service serial-getty@.service systemd-logind.service >/dev/null' \
  --customize-hook='rm -f "$1"/etc/machine-id && touch "$1"/etc/machine-id' \
  bookworm "$work/rootfs.tar" "$MIRROR"
podman import --change 'CMD ["/sbin/init"]' --change 'STOPSIGNAL SIGRTMIN+3' \
  "$work/rootfs.tar" "$IMAGE:$stamp" >/dev/null
podman tag "$IMAGE:$stamp" "$IMAGE:latest"
echo "built $IMAGE:$stamp"
