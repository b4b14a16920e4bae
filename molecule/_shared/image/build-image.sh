#!/usr/bin/env bash
# Build the Molecule test-host images: Debian with systemd as PID 1, one per release.
#   build-image.sh                  every release in the table below
#   build-image.sh debian11         only that one
# No container registry is reachable from the build machines, so each root file system
# is made from Debian's mirror with mmdebstrap and imported into podman. An image is
# tagged with a hash of this script and its release, so a changed package list rebuilds
# it and an unchanged one is reused (a few milliseconds).
set -euo pipefail
MIRROR=${KINDLING_DEBIAN_MIRROR:-http://deb.debian.org/debian}
here=$(cd "$(dirname "$0")" && pwd)

# The releases: image name and Debian suite. debian12 (bookworm, Python 3.11) is the test
# host of every scenario; debian11 (bullseye, Python 3.9, systemd 247, pip 20.3.4) is a
# second host in some, for the older interpreter and tools (docs/DEVELOPMENT.md).
# KINDLING_TEST_IMAGE renames the debian12 image, as it always has (tests/reliability).
declare -A IMAGES=(
  [debian12]=${KINDLING_TEST_IMAGE:-localhost/kindling-debian12-systemd}
  [debian11]=localhost/kindling-debian11-systemd
)
declare -A SUITES=([debian12]=bookworm [debian11]=bullseye)
# Packages a release needs in addition to the common list (none so far: every name below
# exists in both, checked with apt-cache against a scratch bullseye configuration).
declare -A EXTRA_PACKAGES=([debian12]="" [debian11]="")
RELEASES=(debian12 debian11)

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

# Test-bed speed, never a host's setting: a test host is thrown away after its scenario,
# so dpkg need not fsync each file it unpacks (force-unsafe-io; the real toolkit of
# molecule/debian_archive alone is some 1.6 GB of files). Measured in docs/DEVELOPMENT.md.

build() {
  local release=$1 image=${IMAGES[$1]} suite=${SUITES[$1]} stamp
  # shellcheck disable=SC2206  # the extra packages are a space-separated list
  local wanted=("${packages[@]}" ${EXTRA_PACKAGES[$1]})
  stamp=$( (cat "$here/build-image.sh"; echo "$release") | sha256sum | cut -c1-12)
  if podman image exists "$image:$stamp"; then
    podman tag "$image:$stamp" "$image:latest"
    echo "test image $image:$stamp is up to date"
    return 0
  fi
  echo "building $image:$stamp ($suite) from $MIRROR (a minute or two)"
  mmdebstrap --variant=apt --include="$(IFS=,; echo "${wanted[*]}")" \
    --customize-hook='chroot "$1" systemctl mask getty@tty1.service serial-getty@.service systemd-logind.service >/dev/null' \
    --customize-hook='rm -f "$1"/etc/machine-id && touch "$1"/etc/machine-id' \
    --customize-hook='printf "# Kindling test bed only (build-image.sh)\nforce-unsafe-io\n" >"$1"/etc/dpkg/dpkg.cfg.d/kindling-test-bed' \
    "$suite" "$work/$release.tar" "$MIRROR"
  podman import --change 'CMD ["/sbin/init"]' --change 'STOPSIGNAL SIGRTMIN+3' \
    "$work/$release.tar" "$image:$stamp" >/dev/null
  rm -f "$work/$release.tar"
  podman tag "$image:$stamp" "$image:latest"
  echo "built $image:$stamp"
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
[ $# -gt 0 ] || set -- "${RELEASES[@]}"
for release in "$@"; do
  if [ -z "${SUITES[$release]:-}" ]; then
    echo "build-image.sh: unknown release $release (known: ${RELEASES[*]})" >&2
    exit 2
  fi
  build "$release"
done
