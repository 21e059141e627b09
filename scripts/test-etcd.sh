#!/usr/bin/env bash
# The project's own test etcd: a 3-member cluster on 127.0.0.1 (Debian's etcd-server).
#
#   scripts/test-etcd.sh up     install what is missing, start the members not running (idempotent)
#   scripts/test-etcd.sh down   stop only the members `up` started
#   scripts/test-etcd.sh env    print shell exports for the tests
#
# Clients on 127.0.0.1:23791-23793, peers on 23801-23803: never the default 2379/2380, so a
# system etcd on the machine is left alone ($KUBECORE_TEST_ETCD_CLIENT_PORT_BASE and
# $KUBECORE_TEST_ETCD_PEER_PORT_BASE move them, for a second cluster beside this one). The
# cluster is machine-wide, and so is its state: $KUBECORE_TEST_ETCD_STATE, by default
# /var/tmp/kubecore-test-etcd (one data directory, pid file and log per member), shared by
# every checkout on the machine.
set -euo pipefail

STATE="${KUBECORE_TEST_ETCD_STATE:-/var/tmp/kubecore-test-etcd}"
MEMBERS=(1 2 3)
CLIENT_PORT_BASE="${KUBECORE_TEST_ETCD_CLIENT_PORT_BASE:-23790}"
PEER_PORT_BASE="${KUBECORE_TEST_ETCD_PEER_PORT_BASE:-23800}"
TOKEN="kubecore-test-etcd"
PACKAGES=(etcd-server etcd-client)

log() { echo "test-etcd: $*" >&2; }
die() { log "error: $*"; exit 1; }

client_url() { echo "http://127.0.0.1:$((CLIENT_PORT_BASE + $1))"; }
peer_url() { echo "http://127.0.0.1:$((PEER_PORT_BASE + $1))"; }

endpoints() {
    local member out=()
    for member in "${MEMBERS[@]}"; do out+=("$(client_url "$member")"); done
    (IFS=,; echo "${out[*]}")
}

initial_cluster() {
    local member out=()
    for member in "${MEMBERS[@]}"; do out+=("kubecore-test-$member=$(peer_url "$member")"); done
    (IFS=,; echo "${out[*]}")
}

port_open() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

pid_alive() {  # pid_alive FILE NAME: the pid in FILE is running and its command line mentions NAME
    local pid
    [[ -f "$1" ]] || return 1
    pid="$(cat "$1")"
    [[ -n "$pid" && -r "/proc/$pid/cmdline" ]] || return 1
    grep -q -- "$2" <<<"$(tr '\0' ' ' <"/proc/$pid/cmdline")"
}

cluster_healthy() {
    ETCDCTL_API=3 timeout 10 etcdctl --endpoints "$(endpoints)" --dial-timeout 2s \
        endpoint health >/dev/null 2>&1
}

wait_until() {  # wait_until SECONDS WHAT COMMAND...: bounded wait
    local deadline=$((SECONDS + $1)) what="$2"
    shift 2
    until "$@"; do
        ((SECONDS < deadline)) || return 1
        sleep 0.2
    done
    log "$what is up"
}

install_packages() {
    local missing=() pkg
    for pkg in "${PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || missing+=("$pkg")
    done
    ((${#missing[@]} == 0)) && return 0
    log "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q "${missing[@]}" || { apt-get update -q && apt-get install -y -q "${missing[@]}"; }
}

start_member() {  # start_member N
    local member="$1" dir="$STATE/member-$1" state=new
    if pid_alive "$dir/pid" "--name kubecore-test-$member "; then
        return 0
    fi
    port_open "$((CLIENT_PORT_BASE + member))" &&
        die "port $((CLIENT_PORT_BASE + member)) is in use by something this script did not start"
    mkdir -p "$dir"
    # A member that already has data rejoins the cluster it belongs to.
    [[ -d "$dir/data/member" ]] && state=existing
    log "starting member kubecore-test-$member ($(client_url "$member"), log: $dir/etcd.log)"
    setsid etcd \
        --name "kubecore-test-$member" \
        --data-dir "$dir/data" \
        --listen-client-urls "$(client_url "$member")" \
        --advertise-client-urls "$(client_url "$member")" \
        --listen-peer-urls "$(peer_url "$member")" \
        --initial-advertise-peer-urls "$(peer_url "$member")" \
        --initial-cluster "$(initial_cluster)" \
        --initial-cluster-token "$TOKEN" \
        --initial-cluster-state "$state" \
        --heartbeat-interval 100 \
        --election-timeout 1000 \
        >>"$dir/etcd.log" 2>&1 </dev/null &
    echo $! >"$dir/pid"
}

print_env() {
    echo "export KUBECORE_TEST_ETCD_STATE=$STATE"
    echo "export KUBECORE_TEST_ETCD_CLIENT_PORT_BASE=$CLIENT_PORT_BASE"
    echo "export KUBECORE_TEST_ETCD_ENDPOINTS=$(endpoints)"
}

stop_pidfile() {  # stop_pidfile FILE NAME: TERM, bounded wait, then KILL
    local pid i
    if pid_alive "$1" "$2"; then
        pid="$(cat "$1")"
        log "stopping $2 ($pid)"
        kill -TERM "$pid" 2>/dev/null || true
        for i in $(seq 1 100); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.2
        done
        kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$1"
}

cmd_up() {
    local member
    mkdir -p "$STATE"
    if ! command -v etcd >/dev/null || ! command -v etcdctl >/dev/null; then
        [[ $EUID -eq 0 ]] || die "etcd is missing: run as root to install ${PACKAGES[*]}"
        install_packages
    fi
    for member in "${MEMBERS[@]}"; do
        start_member "$member"
    done
    if ! wait_until 60 "etcd cluster $(endpoints)" cluster_healthy; then
        # A cluster whose data directories came from another layout never forms: start afresh.
        log "the cluster did not become healthy; removing its data and starting it again"
        cmd_down
        rm -rf "$STATE"/member-*/data
        for member in "${MEMBERS[@]}"; do
            start_member "$member"
        done
        wait_until 60 "etcd cluster $(endpoints)" cluster_healthy ||
            die "the etcd cluster did not become healthy within 60 s; see $STATE/member-*/etcd.log"
    fi
    print_env >"$STATE/env"
    log "ready; environment in $STATE/env"
}

cmd_down() {
    local member
    for member in "${MEMBERS[@]}"; do
        stop_pidfile "$STATE/member-$member/pid" "--name kubecore-test-$member "
    done
    rm -f "$STATE/env"
}

case "${1:-}" in
    up) cmd_up ;;
    down) cmd_down ;;
    env) print_env ;;
    *) echo "usage: $0 up|down|env" >&2; exit 2 ;;
esac
