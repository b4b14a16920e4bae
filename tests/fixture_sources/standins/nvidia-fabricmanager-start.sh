#!/bin/sh
# nvidia-fabricmanager-start.sh -- Kindling test stand-in, NOT NVIDIA's start script.
# Shipped by the Kindling test-fixture fabric manager packages of branches whose unit starts the
# daemon through this script (@BRANCH@ here; see tests/fixture_sources/build_fixtures.py and
# docs/FIXTURES.md): ExecStartPre runs `--mode precheck`, ExecStart `--mode start`. NVIDIA's
# script tells NVLink 5 systems (which also need nvlsm) from earlier ones; the fixture's HGX
# host is an earlier one, so `start` reports "Detected Pre-NVL5 system" and runs
#     /usr/bin/nv-fabricmanager -c <config>
# which forks into the background; a failure is reported the way NVIDIA's script does
# ("... failed! Exit code: N") and the script exits 1. `precheck` only checks that the daemon
# is there (what NVIDIA's precheck does on a pre-NVL5 system is not in the sources read).
# KINDLING_FAKE_FM_BIN overrides the daemon's path (tests).
FM_BIN="${KINDLING_FAKE_FM_BIN:-/usr/bin/nv-fabricmanager}"
mode=
config=/usr/share/nvidia/nvswitch/fabricmanager.cfg
pid_file=

usage() {
    echo "NVIDIA Fabric Manager Start Script (Kindling test stand-in, not NVIDIA's)"
    echo "Usage: $0 [script options] --args [arguments to run fabric manager]"
    echo "  -m, --mode              Mode to run this script (start|stop|precheck)"
    echo "  --fm-config-file        Path to fabric manager configuration file"
    echo "  --fm-pid-file           Path to fabric manager PID file"
    echo "  --nvlsm-config-file     Path to NVLink Subnet Manager configuration file (ignored)"
    echo "  --nvlsm-pid-file        Path to NVLink Subnet Manager PID file (ignored)"
}

while [ $# -gt 0 ]; do
    case "$1" in
        -m|--mode) mode="$2"; shift 2 ;;
        --fm-config-file) config="$2"; shift 2 ;;
        --fm-pid-file) pid_file="$2"; shift 2 ;;
        --nvlsm-config-file|--nvlsm-pid-file) shift 2 ;;
        -d|--debug) shift ;;
        -h|--help) usage; exit 0 ;;
        --args) shift; break ;;
        *) echo "Unknown option: $1"; usage; exit 1 ;;
    esac
done

case "$mode" in
    precheck)
        [ -x "$FM_BIN" ] || { echo "$FM_BIN is missing, fabric manager cannot be started"; exit 1; }
        exit 0 ;;
    start)
        echo "Detected Pre-NVL5 system"
        "$FM_BIN" -c "$config" "$@"
        rc=$?
        if [ "$rc" -ne 0 ]; then
            echo "\"$FM_BIN -c $config\" failed! Exit code: $rc"
            exit 1
        fi
        exit 0 ;;
    stop)
        pid_file="${pid_file:-${KINDLING_FAKE_FM_RUN_DIR:-/run/nvidia-fabricmanager}/nv-fabricmanager.pid}"
        [ -r "$pid_file" ] && kill "$(cat "$pid_file")" 2>/dev/null
        exit 0 ;;
    *)
        usage
        exit 1 ;;
esac
