#!/usr/bin/env bash
# Start a single-node SLURM on this machine (munged, slurmctld and slurmd on localhost), for the
# tests that submit Dask workers through dask-jobqueue's SLURMCluster.
#
# Needs root and Debian's packages `slurm-wlm` and `munge` (installed when missing and apt-get
# is available). Idempotent: when the controller already answers and the node is up, it changes
# nothing. Exits non-zero with a message saying what failed, and where its log is.
#
# Environment: OOCGBDT_SLURM_STATE (state folder, default /var/spool/oocgbdt-slurm),
# OOCGBDT_SLURM_LOGS (logs, default /var/log/oocgbdt-slurm).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
state="${OOCGBDT_SLURM_STATE:-/var/spool/oocgbdt-slurm}"
logs="${OOCGBDT_SLURM_LOGS:-/var/log/oocgbdt-slurm}"
conf=/etc/slurm/slurm.conf

fail() { echo "error: slurm setup: $*" >&2; exit 1; }

node_ready() {
    # The controller answers, this machine's slurmd answers, and the node is idle, mixed or
    # allocated (not down or drained).
    scontrol ping 2>/dev/null | grep -q "is UP" || return 1
    scontrol show slurmd >/dev/null 2>&1 || return 1
    sinfo -h -N -o "%T" 2>/dev/null | grep -Eq "^(idle|mixed|allocated|completing)$"
}

if command -v sbatch >/dev/null && node_ready; then
    echo "slurm: already running ($(sinfo -h -N -o '%N %c CPUs %m MB %T' | head -1))"
    exit 0
fi

[ "$(id -u)" = 0 ] || fail "must run as root (found uid $(id -u))"

if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null \
        || ! command -v munged >/dev/null; then
    command -v apt-get >/dev/null \
        || fail "slurmctld/slurmd/munged not installed and apt-get not available to install" \
                "Debian's slurm-wlm and munge"
    echo "slurm: installing slurm-wlm and munge with apt-get"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq || fail "apt-get update failed"
    apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null \
        || fail "apt-get install slurm-wlm munge failed"
fi

mkdir -p "$state/slurmctld" "$state/slurmd" "$logs" /etc/slurm

# munge: the key exists after Debian's package is installed; make one if it does not.
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
    if [ ! -s /etc/munge/munge.key ]; then
        mkdir -p /etc/munge
        dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
    fi
    chown munge:munge /etc/munge/munge.key 2>/dev/null || true
    chmod 400 /etc/munge/munge.key
    mkdir -p /run/munge /var/lib/munge /var/log/munge
    chown munge:munge /run/munge /var/lib/munge /var/log/munge 2>/dev/null || true
    if id munge >/dev/null 2>&1; then
        runuser -u munge -- munged || fail "munged did not start (see /var/log/munge/munged.log)"
    else
        munged --force || fail "munged did not start (see /var/log/munge/munged.log)"
    fi
    for _ in $(seq 50); do
        munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break
        sleep 0.1
    done
    munge -n | unmunge >/dev/null 2>&1 \
        || fail "munge does not authenticate (see /var/log/munge/munged.log)"
fi

host="$(hostname -s)"
cpus="$(nproc)"
# RealMemory a little under the machine's, in MB, so slurmd never reports less than configured.
mem_mb=$(( $(awk '/^MemTotal:/ {print $2}' /proc/meminfo) / 1024 * 95 / 100 ))
sed -e "s|@HOST@|$host|g" -e "s|@STATE@|$state|g" -e "s|@LOGS@|$logs|g" \
    -e "s|@CPUS@|$cpus|g" -e "s|@MEMORY_MB@|$mem_mb|g" "$here/slurm.conf.in" > "$conf.new"
mv "$conf.new" "$conf"

if ! scontrol ping 2>/dev/null | grep -q "is UP"; then
    pkill_pid() { [ -s "$1" ] && kill "$(cat "$1")" 2>/dev/null || true; }
    pkill_pid "$state/slurmctld.pid"
    slurmctld || fail "slurmctld did not start (see $logs/slurmctld.log)"
fi
if ! { [ -s "$state/slurmd.pid" ] && kill -0 "$(cat "$state/slurmd.pid")" 2>/dev/null; }; then
    slurmd || fail "slurmd did not start (see $logs/slurmd.log)"
fi

for _ in $(seq 60); do
    node_ready && break
    # A node left down by an earlier run comes back once its slurmd registers again.
    scontrol update nodename="$host" state=resume >/dev/null 2>&1 || true
    sleep 0.5
done
node_ready || fail "the node did not come up in 30 s: $(sinfo -h -N -o '%N %T %E' 2>&1)" \
    "(see $logs/slurmctld.log and $logs/slurmd.log)"
echo "slurm: running ($(sinfo -h -N -o '%N %c CPUs %m MB %T' | head -1))"
