#!/usr/bin/env bash
# The project's own test containerd: a containerd with its CRI plugin, the test images and a CNI
# bridge of its own, for the tests of a CRI runtime.
#
#   scripts/test-containerd.sh up     install what is missing, start what is not running (idempotent)
#   scripts/test-containerd.sh down   stop only what `up` started, remove the bridge it made
#   scripts/test-containerd.sh env    print shell exports for the tests
#
# The containerd runs beside any other on the machine: its config, root, state, socket, pid file,
# runc root, CNI config, IPAM data and registry hosts are all under $KUBECORE_TEST_CONTAINERD_STATE
# (default /var/tmp/kubecore-test-containerd; with a KUBECORE_TEST_ENGINE_STATE of its own, that
# directory with "-containerd" appended), so the machine's /run/containerd and the containerd that
# dockerd manages are never used. (containerd 1.6 puts its shims' sockets in /run/containerd/s, by
# a hash of its own socket's path: that one directory is shared, no file in it is.)
# The images come from the project's test Docker engine (scripts/test-engine.sh up, called first):
# `docker save | ctr images import` into the CRI's namespace k8s.io, where they are named
# docker.io/<name>; the pause image is the CRI's sandbox image, so nothing is ever pulled from the
# internet. The engine's registries (127.0.0.1 and localhost, on its two ports) are plain HTTP.
# Pod sandboxes get their network from a CNI bridge (its own, default kccri0; the next free
# kccriN when another state already has it) on a free 10.214.x.0/24, host-local IPAM, portmap;
# containerd adds the loopback network itself.
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ENGINE_STATE="${KUBECORE_TEST_ENGINE_STATE:-/var/tmp/kubecore-test-engine}"
if [[ -n "${KUBECORE_TEST_CONTAINERD_STATE:-}" ]]; then
    STATE="$KUBECORE_TEST_CONTAINERD_STATE"
elif [[ "$ENGINE_STATE" != /var/tmp/kubecore-test-engine ]]; then
    STATE="$ENGINE_STATE-containerd"  # a run on an engine of its own gets a containerd of its own
else
    STATE=/var/tmp/kubecore-test-containerd
fi
SOCK="$STATE/containerd.sock"
CONFIG="$STATE/config.toml"
PID_FILE="$STATE/containerd.pid"
LOG_FILE="$STATE/containerd.log"
CNI_CONF_DIR="$STATE/cni/net.d"
IPAM_DIR="$STATE/cni/ipam"
HOSTS_DIR="$STATE/certs.d"
BRIDGE_FILE="$STATE/bridge"  # "NAME CIDR" of the bridge `up` made
IMAGES_STAMP="$STATE/images"  # "NAME DOCKER-ID" of each image imported
NAMESPACE=k8s.io  # the CRI plugin's containerd namespace
CNI_BIN_DIR=/usr/lib/cni
PACKAGES=(containerd runc containernetworking-plugins)
DOCKER_IMAGES=(kubecore-test/busybox:1.35 kubecore-test/pause:3.9)
CRI_IMAGE=docker.io/kubecore-test/busybox:1.35
CRI_PAUSE_IMAGE=docker.io/kubecore-test/pause:3.9
ctr_() { ctr --address "$SOCK" --namespace "$NAMESPACE" "$@"; }

log() { echo "test-containerd: $*" >&2; }
die() { log "error: $*"; exit 1; }

pid_alive() {  # pid_alive FILE NAME: the pid in FILE is running and its command line mentions NAME
    local pid
    [[ -f "$1" ]] || return 1
    pid="$(cat "$1")"
    [[ -n "$pid" && -r "/proc/$pid/cmdline" ]] || return 1
    grep -q -- "$2" <<<"$(tr '\0' ' ' <"/proc/$pid/cmdline")"
}

containerd_answers() {
    [[ -S "$SOCK" ]] && timeout 5 ctr --address "$SOCK" version >/dev/null 2>&1
}

cri_loaded() {  # the CRI plugin of this containerd loaded ("ok" in `ctr plugins ls`)
    timeout 5 ctr --address "$SOCK" plugins ls 2>/dev/null |
        awk '$1 == "io.containerd.grpc.v1" && $2 == "cri" {print $NF}' | grep -qx ok
}

answers_or_exited() {  # answers_or_exited PID
    containerd_answers || ! kill -0 "$1" 2>/dev/null
}

wait_until() {  # wait_until SECONDS WHAT COMMAND...: bounded wait
    local deadline=$((SECONDS + $1)) what="$2"
    shift 2
    until "$@"; do
        ((SECONDS < deadline)) || return 1
        sleep 0.2
    done
    [[ -z "$what" ]] || log "$what is up"
}

install_packages() {
    local missing=() pkg
    for pkg in "${PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || missing+=("$pkg")
    done
    ((${#missing[@]} == 0)) && return 0
    log "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q "${missing[@]}"
}

ip_to_int() {
    local IFS=. a b c d
    read -r a b c d <<<"$1"
    echo $(((a << 24) | (b << 16) | (c << 8) | d))
}

network_in_use() {  # network_in_use A.B.C.D/LEN: a route or an address of the host overlaps it
    local start end prefix net len pstart pend
    start=$(ip_to_int "${1%/*}")
    end=$((start + (1 << (32 - ${1#*/})) - 1))
    while read -r prefix; do
        [[ "$prefix" == */* ]] || prefix="$prefix/32"
        net="${prefix%/*}" len="${prefix#*/}"
        pstart=$(($(ip_to_int "$net") & ~((1 << (32 - len)) - 1) & 0xffffffff))
        pend=$((pstart + (1 << (32 - len)) - 1))
        ((pstart <= end && start <= pend)) && return 0
    done < <({ ip -4 route show | awk '$1 != "default" {print $1}'
               ip -4 -o addr show | awk '{print $4}'; })
    return 1
}

pick_bridge_name() {  # the bridge's name: as told, else the first kccriN no link has yet
    local n
    if [[ -n "${KUBECORE_TEST_CONTAINERD_BRIDGE:-}" ]]; then
        echo "$KUBECORE_TEST_CONTAINERD_BRIDGE"
        return 0
    fi
    for n in $(seq 0 31); do
        ip link show "kccri$n" >/dev/null 2>&1 || { echo "kccri$n"; return 0; }
    done
    die "kccri0 to kccri31 all exist; set KUBECORE_TEST_CONTAINERD_BRIDGE"
}

make_bridge() {
    # The pods' bridge on a /24 the host does not route yet (kept across `up`s).
    local name third cidr
    if [[ -f "$BRIDGE_FILE" ]]; then
        name="$(cut -d' ' -f1 "$BRIDGE_FILE")"
        if [[ -n "${KUBECORE_TEST_CONTAINERD_BRIDGE:-}" && "$KUBECORE_TEST_CONTAINERD_BRIDGE" != "$name" ]]; then
            die "$STATE belongs to bridge $name, not $KUBECORE_TEST_CONTAINERD_BRIDGE"
        fi
        ip link show "$name" >/dev/null 2>&1 && return 0
        rm -f "$BRIDGE_FILE"  # the link went (a reboot): made again, on a range free now
    fi
    name="$(pick_bridge_name)"
    [[ "$name" == docker0 || "$name" == cni0 || "$name" == kubecore0 ]] &&
        die "$name is another engine's bridge; set KUBECORE_TEST_CONTAINERD_BRIDGE to a name of its own"
    ip link show "$name" >/dev/null 2>&1 &&
        die "a link $name exists that this script did not make; set KUBECORE_TEST_CONTAINERD_BRIDGE to another name"
    for third in $(seq 0 255); do
        cidr="10.214.$third.0/24"
        network_in_use "$cidr" || break
        cidr=""
    done
    [[ -n "$cidr" ]] || die "no free /24 in 10.214.0.0/16 for the pods' bridge"
    log "making bridge $name on $cidr"
    ip link add name "$name" type bridge
    ip addr add "10.214.$third.1/24" dev "$name"
    ip link set "$name" up
    echo "$name $cidr" >"$BRIDGE_FILE"
}

write_cni_config() {
    local name cidr
    read -r name cidr <"$BRIDGE_FILE"
    mkdir -p "$CNI_CONF_DIR" "$IPAM_DIR"
    # No masquerading: pods are reached from the host over the bridge, never from outside.
    cat >"$CNI_CONF_DIR/10-kubecore.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "kubecore-$name",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$name",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "$cidr", "gateway": "${cidr%.0/24}.1"}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": "$IPAM_DIR"
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF
}

engine_setting() {  # engine_setting KEY: a value from the test engine's environment
    bash "$HERE/test-engine.sh" env | sed -n "s/^export $1=//p"
}

write_registry_hosts() {
    # Each of the engine's registries, by either name, as a plain-HTTP host (containerd's
    # hosts.toml, read at each pull: config_path in the CRI section).
    local registry port host
    rm -rf "$HOSTS_DIR"
    for registry in "$(engine_setting KUBECORE_TEST_REGISTRY)" "$(engine_setting KUBECORE_TEST_AUTH_REGISTRY)"; do
        port="${registry##*:}"
        [[ "$port" =~ ^[0-9]+$ ]] || die "the test engine's environment names no registry port ($registry)"
        for host in "localhost:$port" "127.0.0.1:$port"; do
            mkdir -p "$HOSTS_DIR/$host"
            cat >"$HOSTS_DIR/$host/hosts.toml" <<EOF
server = "http://$host"

[host."http://$host"]
  capabilities = ["pull", "resolve"]
EOF
        done
    done
}

write_config() {
    mkdir -p "$STATE/root" "$STATE/state" "$STATE/runc" "$STATE/opt"
    cat >"$CONFIG.new" <<EOF
# Written by scripts/test-containerd.sh: the project's own test containerd.
version = 2
root = "$STATE/root"
state = "$STATE/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
                    "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs"]

[grpc]
  address = "$SOCK"

[ttrpc]
  address = "$SOCK.ttrpc"

[debug]
  address = ""

[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = "$STATE/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$CRI_PAUSE_IMAGE"
  netns_mounts_under_state_dir = true
  # Lowering a score needs CAP_SYS_RESOURCE, which root may lack (in a VM sandbox, say): the
  # sandboxes' -998 is kept no lower than containerd's own score.
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_tls_streaming = false

  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$CNI_BIN_DIR"
    conf_dir = "$CNI_CONF_DIR"
    max_conf_num = 1

  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"

    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"

      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        Root = "$STATE/runc"
        SystemdCgroup = false

  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "$HOSTS_DIR"
EOF
    if [[ -f "$CONFIG" ]] && cmp -s "$CONFIG" "$CONFIG.new"; then
        rm -f "$CONFIG.new"
        return 0
    fi
    # A containerd running on the old config is restarted on the new one (its shims, and so its
    # pods, outlive the restart).
    if pid_alive "$PID_FILE" "$CONFIG"; then
        log "the config changed: restarting containerd"
        stop_pid "$(cat "$PID_FILE")" "containerd on $SOCK"
    fi
    mv "$CONFIG.new" "$CONFIG"
}

start_containerd() {
    local launched
    if pid_alive "$PID_FILE" "$CONFIG" && containerd_answers; then
        return 0
    fi
    containerd_answers &&
        die "a containerd this script did not start answers on $SOCK; stop it, or use another KUBECORE_TEST_CONTAINERD_STATE"
    rm -f "$SOCK" "$SOCK.ttrpc"
    log "starting containerd on $SOCK (log: $LOG_FILE)"
    setsid containerd --config "$CONFIG" >>"$LOG_FILE" 2>&1 </dev/null &
    launched=$!
    echo "$launched" >"$PID_FILE"
    wait_until 60 "" answers_or_exited "$launched" || true
    containerd_answers && { log "containerd is up"; return 0; }
    if kill -0 "$launched" 2>/dev/null; then
        stop_pid "$launched" "containerd on $SOCK (it did not answer in 60 s)"
        die "containerd did not answer on $SOCK within 60 s; see $LOG_FILE"
    fi
    die "containerd exited at its start: $(tail -n 3 "$LOG_FILE" | tr '\n' ' ')(log: $LOG_FILE)"
}

import_images() {
    # Imported again only when the engine's image changed or containerd lost it.
    local want="" image id present
    for image in "${DOCKER_IMAGES[@]}"; do
        id="$(DOCKER_HOST="$(engine_setting KUBECORE_DOCKER_HOST)" docker image inspect -f '{{.Id}}' "$image")" ||
            die "the test engine has no $image"
        want+="$image $id"$'\n'
    done
    present="$(ctr_ images ls -q)"
    if [[ -f "$IMAGES_STAMP" && "$(cat "$IMAGES_STAMP")"$'\n' == "$want" ]] &&
        grep -qxF "$CRI_IMAGE" <<<"$present" && grep -qxF "$CRI_PAUSE_IMAGE" <<<"$present"; then
        return 0
    fi
    log "importing ${DOCKER_IMAGES[*]} into $NAMESPACE"
    DOCKER_HOST="$(engine_setting KUBECORE_DOCKER_HOST)" docker save "${DOCKER_IMAGES[@]}" |
        ctr_ images import - >/dev/null
    present="$(ctr_ images ls -q)"
    grep -qxF "$CRI_IMAGE" <<<"$present" && grep -qxF "$CRI_PAUSE_IMAGE" <<<"$present" ||
        die "the import did not give $CRI_IMAGE and $CRI_PAUSE_IMAGE (it gave: $present)"
    printf '%s' "$want" >"$IMAGES_STAMP"
}

print_env() {
    local name="" cidr=""
    [[ -f "$BRIDGE_FILE" ]] && read -r name cidr <"$BRIDGE_FILE"
    cat <<EOF
export KUBECORE_TEST_CONTAINERD_STATE=$STATE
export KUBECORE_TEST_CRI_ENDPOINT=unix://$SOCK
export KUBECORE_TEST_CRI_NAMESPACE=$NAMESPACE
export KUBECORE_TEST_CRI_IMAGE=$CRI_IMAGE
export KUBECORE_TEST_CRI_PAUSE_IMAGE=$CRI_PAUSE_IMAGE
export KUBECORE_TEST_CRI_BRIDGE=$name
export KUBECORE_TEST_CRI_SUBNET=$cidr
EOF
}

stop_pid() {  # stop_pid PID NAME: TERM, bounded wait, then KILL
    local i
    kill -0 "$1" 2>/dev/null || return 0
    log "stopping $2 ($1)"
    kill -TERM "$1" 2>/dev/null || true
    for i in $(seq 1 100); do
        kill -0 "$1" 2>/dev/null || return 0
        sleep 0.2
    done
    kill -KILL "$1" 2>/dev/null || true
}

stop_tasks() {
    # containerd's shims outlive it: every task of this containerd is killed first, as a stopped
    # dockerd's containers stop with it (their pods stay listed, not ready).
    local task i
    containerd_answers || return 0
    for task in $(ctr_ tasks ls -q 2>/dev/null); do
        ctr_ tasks kill --signal SIGKILL "$task" >/dev/null 2>&1 || true
    done
    for task in $(ctr_ tasks ls -q 2>/dev/null); do
        for i in $(seq 1 50); do
            ctr_ tasks delete "$task" >/dev/null 2>&1 && break
            sleep 0.2
        done
    done
}

unmount_state() {
    # What a stopped containerd leaves mounted under its state (pod network namespaces, rootfs
    # overlays), deepest first, so that the state directory can be removed.
    local mount
    awk '{print $2}' /proc/mounts | { grep -E "^$STATE(/|$)" || true; } |
        sort -r | while read -r mount; do
            umount -l "$mount" || log "could not unmount $mount"
        done
}

remove_bridge() {
    local name
    [[ -f "$BRIDGE_FILE" ]] || return 0
    name="$(cut -d' ' -f1 "$BRIDGE_FILE")"
    if ip link show "$name" >/dev/null 2>&1; then
        log "removing bridge $name"
        ip link delete "$name" type bridge || true
    fi
    rm -f "$BRIDGE_FILE"
}

cmd_up() {
    [[ $EUID -eq 0 ]] || die "run as root (it installs packages, makes a bridge and starts containerd)"
    mkdir -p "$STATE"
    rm -f "$STATE/env"  # written again once all is up: no test reads a half-made set-up
    install_packages
    local plugin
    for plugin in bridge host-local portmap loopback; do
        [[ -x "$CNI_BIN_DIR/$plugin" ]] || die "$CNI_BIN_DIR/$plugin is missing (package containernetworking-plugins)"
    done
    bash "$HERE/test-engine.sh" up
    make_bridge
    write_cni_config
    write_registry_hosts
    write_config
    start_containerd
    wait_until 30 "the CRI plugin" cri_loaded ||
        die "containerd on $SOCK answers but its CRI plugin did not load; see $LOG_FILE"
    import_images
    print_env >"$STATE/env"
    log "ready: CRI on unix://$SOCK, pods on $(cat "$BRIDGE_FILE"); environment in $STATE/env"
}

cmd_down() {
    # Only the containerd this state's `up` started (its pid file, its config on the command line).
    if pid_alive "$PID_FILE" "$CONFIG"; then
        stop_tasks
        stop_pid "$(cat "$PID_FILE")" "containerd on $SOCK"
        rm -rf "$IPAM_DIR"  # every pod's task was stopped: no address in it is held
    fi
    rm -f "$PID_FILE" "$STATE/env"
    unmount_state
    remove_bridge
}

case "${1:-}" in
    up) cmd_up ;;
    down) cmd_down ;;
    env) print_env ;;
    *) echo "usage: $0 up|down|env" >&2; exit 2 ;;
esac
