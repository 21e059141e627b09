#!/usr/bin/env bash
# The project's own test engine: a private Docker engine, a busybox test image and two local
# registries.
#
#   scripts/test-engine.sh up     install what is missing, start what is not running (idempotent)
#   scripts/test-engine.sh down   stop only what `up` started, remove the bridge it made
#   scripts/test-engine.sh env    print shell exports for the tests
#
# Nothing is ever pulled from the internet: the image is a `docker import` of /bin/busybox.
# The engine is a dockerd of its own, beside any engine the machine already runs: its socket,
# data root, exec root (with its managed containerd), pid file and bridge are all under or named
# by $KUBECORE_TEST_ENGINE_STATE (default /var/tmp/kubecore-test-engine), so the machine's
# /var/run/docker.sock, its images and its docker0 are never touched. The engine runs with
# --iptables=false: a second dockerd with iptables on would flush the first one's DOCKER
# chains at its start; published ports (hostPort) still work through docker-proxy.
set -euo pipefail

STATE="${KUBECORE_TEST_ENGINE_STATE:-/var/tmp/kubecore-test-engine}"
DOCKER=/usr/bin/docker
SOCK="$STATE/docker.sock"
DATA_ROOT="$STATE/data"
EXEC_ROOT="$STATE/exec"
ENGINE_PID="$STATE/engine.pid"
ENGINE_LOG="$STATE/engine.log"
# The bridge the engine's containers attach to: made by `up`, removed by `down`.
BRIDGE="${KUBECORE_TEST_ENGINE_BRIDGE:-kubecore0}"
BRIDGE_FILE="$STATE/bridge"  # "NAME CIDR" of the bridge `up` made
export DOCKER_HOST="unix://$SOCK"

# The project's own names: an image by another name on the engine is never written over.
TEST_IMAGE="kubecore-test/busybox:1.35"
PAUSE_IMAGE="kubecore-test/pause:3.9"
REGISTRY_PORT="${KUBECORE_TEST_REGISTRY_PORT:-5000}"
AUTH_REGISTRY_PORT="${KUBECORE_TEST_AUTH_REGISTRY_PORT:-$((REGISTRY_PORT + 1))}"
REGISTRY="localhost:$REGISTRY_PORT"
AUTH_REGISTRY="localhost:$AUTH_REGISTRY_PORT"
AUTH_USER="kubecore"
AUTH_PASSWORD="kubecore-test-password"
REGISTRY_IMAGE="kubecore/busybox:1.35"
# A distinct image (its own id, same layer) that only the pull-use-remove tests touch.
PULLABLE_IMAGE="kubecore/pullable:1"
PACKAGES=(docker.io busybox-static docker-registry apache2-utils)
# tar (with test, mkdir and sh) is what `kubectl cp` runs in a container; stty and tty serve the
# terminal tests, httpd and nc the port-forward tests.
APPLETS=(sh ash sleep httpd wget cat echo true false ls mkdir rm test env kill nc dd head tail
         seq printf grep sed touch date id hostname ps sync yes wc tr cut expr uname mount
         stat chmod ln cp mv pwd timeout usleep tar gzip gunzip find xargs stty tty md5sum
         sha256sum cmp diff du basename dirname readlink realpath rmdir mkfifo)
REQUIRED_APPLETS=(sh sleep tar test httpd nc)

log() { echo "test-engine: $*" >&2; }
die() { log "error: $*"; exit 1; }

engine_answers() {
    timeout 5 "$DOCKER" version --format '{{.Server.Version}}' >/dev/null 2>&1
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
    apt-get update -q
    apt-get install -y -q "${missing[@]}"
}

MANAGED_CONTAINERD_PID="$EXEC_ROOT/containerd/containerd.pid"

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

make_bridge() {
    # The engine's own bridge on a /24 the host does not route yet (kept across `up`s).
    local third cidr
    if [[ -f "$BRIDGE_FILE" ]] && ip link show "$BRIDGE" >/dev/null 2>&1; then
        [[ "$(cut -d' ' -f1 "$BRIDGE_FILE")" == "$BRIDGE" ]] ||
            die "$STATE belongs to bridge $(cut -d' ' -f1 "$BRIDGE_FILE"), not $BRIDGE"
        return 0
    fi
    ip link show "$BRIDGE" >/dev/null 2>&1 &&
        die "a link $BRIDGE exists that this script did not make; set KUBECORE_TEST_ENGINE_BRIDGE to another name"
    for third in $(seq 0 255); do
        cidr="10.213.$third.0/24"
        network_in_use "$cidr" || break
        cidr=""
    done
    [[ -n "$cidr" ]] || die "no free /24 in 10.213.0.0/16 for the engine's bridge"
    log "making bridge $BRIDGE on $cidr"
    ip link add name "$BRIDGE" type bridge
    ip addr add "10.213.$third.1/24" dev "$BRIDGE"
    ip link set "$BRIDGE" up
    echo "$BRIDGE $cidr" >"$BRIDGE_FILE"
}

unmount_state() {
    # What a stopped engine leaves mounted on and under its roots (its netns/default, the data
    # root bound on itself by a dockerd that was killed, overlays), deepest first, so that the
    # state directory can be removed.
    local mount
    awk '{print $2}' /proc/mounts | { grep -E "^($EXEC_ROOT|$DATA_ROOT)(/|$)" || true; } |
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

dockerd_answers_or_exited() {  # dockerd_answers_or_exited PID
    engine_answers || ! kill -0 "$1" 2>/dev/null
}

start_engine() {
    local attempt launched
    if engine_answers; then
        return 0
    fi
    make_bridge
    mkdir -p "$DATA_ROOT" "$EXEC_ROOT"
    # Its own (empty) configuration: /etc/docker/daemon.json belongs to the machine's engine.
    [[ -f "$STATE/daemon.json" ]] || echo '{}' >"$STATE/daemon.json"
    # After dockerd was killed (SIGKILL), the containerd it managed can linger without
    # answering; the next dockerd then waits on it and gives up ("timeout waiting for
    # containerd to start"). Such a containerd is stopped and dockerd started again.
    for attempt in 1 2 3; do
        log "starting dockerd on $SOCK (log: $ENGINE_LOG)"
        setsid dockerd \
            --config-file "$STATE/daemon.json" \
            --host "unix://$SOCK" \
            --data-root "$DATA_ROOT" \
            --exec-root "$EXEC_ROOT" \
            --pidfile "$ENGINE_PID" \
            --bridge "$BRIDGE" \
            --iptables=false \
            --ip-masq=false \
            >>"$ENGINE_LOG" 2>&1 </dev/null &
        launched=$!
        wait_until 90 "dockerd (or its exit)" dockerd_answers_or_exited "$launched" &&
            engine_answers && return 0
        log "dockerd did not come up (attempt $attempt); stopping it and its containerd"
        stop_pid "$launched" dockerd
        stop_pidfile "$MANAGED_CONTAINERD_PID" "$EXEC_ROOT"
    done
    die "dockerd did not answer after 3 attempts; see $ENGINE_LOG"
}

image_id() {  # image_id REF: the engine's id for REF, empty when it has none
    "$DOCKER" image inspect -f '{{.Id}}' "$1" 2>/dev/null || true
}

made_here() {  # made_here REF: REF is absent, or names an image this script made
    local current
    current="$(image_id "$1")"
    [[ -z "$current" ]] || grep -qxF "$current" "$STATE/images" 2>/dev/null
}

claim() {  # claim REF: refuse to write REF over an image this script did not make
    made_here "$1" ||
        die "$1 on $SOCK is not an image this script made; it is left as it is (remove it, or use another KUBECORE_TEST_ENGINE_STATE)"
}

remember() {  # remember ID: an image this script made
    grep -qxF "$1" "$STATE/images" 2>/dev/null || echo "$1" >>"$STATE/images"
}

build_image() {
    local rootfs="$STATE/rootfs" tarball="$STATE/rootfs.tar" applet available digest current previous
    [[ -x /bin/busybox ]] || die "/bin/busybox is missing (package busybox-static)"
    rm -rf "$rootfs"
    mkdir -p "$rootfs"/{bin,etc,tmp,proc,sys,dev,root,var/www,www}
    chmod 1777 "$rootfs/tmp"
    cp /bin/busybox "$rootfs/bin/busybox"
    # The list is read once: `busybox --list | grep -q` under pipefail fails at random (grep
    # stops at its match, busybox dies of SIGPIPE), which left images without /bin/sh.
    available="$(/bin/busybox --list)"
    for applet in "${APPLETS[@]}"; do
        if grep -qx "$applet" <<<"$available"; then
            ln -s busybox "$rootfs/bin/$applet"
        fi
    done
    for applet in "${REQUIRED_APPLETS[@]}"; do
        [[ -L "$rootfs/bin/$applet" ]] || die "the test image's rootfs has no /bin/$applet (busybox has no such applet)"
    done
    printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n' >"$rootfs/etc/passwd"
    printf 'root:x:0:\nnogroup:x:65534:\n' >"$rootfs/etc/group"
    # The sandbox (pause) command: sleeps forever, exits 0 at once on TERM or INT.
    cat >"$rootfs/pause" <<'EOF'
#!/bin/sh
trap 'exit 0' TERM INT
while :; do sleep 3600 & wait $!; done
EOF
    chmod 755 "$rootfs/pause"
    tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$rootfs" -cf "$tarball" .
    # Rebuilt only when the rootfs changed or the image is gone (a stamp: tarball digest, image id).
    digest="$(sha256sum "$tarball" | cut -d' ' -f1)"
    current="$(image_id "$TEST_IMAGE")"
    previous=""
    if [[ -z "$current" || ! -f "$STATE/image.stamp" || "$(cat "$STATE/image.stamp")" != "$digest $current" ]]; then
        claim "$TEST_IMAGE"
        log "importing $TEST_IMAGE"
        previous="$current"
        current="$("$DOCKER" import \
            --change 'CMD ["/pause"]' \
            --change 'ENV PATH=/bin' \
            "$tarball" "$TEST_IMAGE")"
        remember "$current"
        echo "$digest $current" >"$STATE/image.stamp"
    fi
    claim "$PAUSE_IMAGE"
    "$DOCKER" tag "$TEST_IMAGE" "$PAUSE_IMAGE"
    drop_replaced "$previous" "$current"
}

drop_replaced() {  # drop_replaced OLD-ID NEW-ID: the image a rebuild replaced, once nothing uses it
    # Only an image this script made, never by force: while a container (of a test running
    # now) still uses it, the engine refuses and it stays, untagged (harmless).
    [[ -n "$1" && "$1" != "$2" ]] || return 0
    grep -qxF "$1" "$STATE/images" 2>/dev/null || return 0
    [[ "$("$DOCKER" image inspect -f '{{len .RepoTags}}' "$1" 2>/dev/null)" == 0 ]] || {
        log "kept the replaced test image ${1#sha256:} (absent, or tagged by someone else)"
        return 0
    }
    if "$DOCKER" rmi "$1" >/dev/null 2>&1; then
        log "removed the replaced test image ${1#sha256:}"
    else
        log "kept the replaced test image ${1#sha256:} (a container still uses it)"
    fi
}

write_registry_config() {  # write_registry_config PORT [auth]
    local port="$1" dir="$STATE/registry-$1"
    mkdir -p "$dir/data"
    {
        echo "version: 0.1"
        echo "log:"
        echo "  level: warn"
        echo "storage:"
        echo "  filesystem:"
        echo "    rootdirectory: $dir/data"
        echo "  delete:"
        echo "    enabled: true"
        echo "http:"
        echo "  addr: 127.0.0.1:$port"
        echo "  secret: kubecore-test-engine-$port"
        if [[ "${2:-}" == auth ]]; then
            echo "auth:"
            echo "  htpasswd:"
            echo "    realm: kubecore-test"
            echo "    path: $dir/htpasswd"
        fi
    } >"$dir/config.yml"
    if [[ "${2:-}" == auth ]]; then
        htpasswd -Bbn "$AUTH_USER" "$AUTH_PASSWORD" >"$dir/htpasswd"
    fi
}

start_registry() {  # start_registry PORT [auth]
    local port="$1" dir="$STATE/registry-$1"
    if pid_alive "$dir/pid" docker-registry && port_open "$port"; then
        return 0
    fi
    if port_open "$port"; then
        if command -v systemctl >/dev/null && systemctl is-active --quiet docker-registry 2>/dev/null; then
            log "stopping the distribution's docker-registry service (it holds :$port)"
            systemctl stop docker-registry
            touch "$STATE/stopped-system-registry"
        else
            die "port $port is in use by something this script did not start"
        fi
    fi
    write_registry_config "$@"
    log "starting registry on 127.0.0.1:$port"
    setsid docker-registry serve "$dir/config.yml" >>"$dir/registry.log" 2>&1 </dev/null &
    echo $! >"$dir/pid"
    wait_until 30 "registry :$port" port_open "$port" || die "registry :$port did not start; see $dir/registry.log"
}

manifest_present() {  # manifest_present URL [user:password]
    local url="$1"
    [[ -n "${2:-}" ]] && url="${url/http:\/\//http://$2@}"
    busybox wget -q --spider \
        --header 'Accept: application/vnd.docker.distribution.manifest.v2+json' "$url" 2>/dev/null
}

pushed() {  # pushed IMAGE-ID|"" HOST:PORT REPOSITORY:TAG [user:password]: already in the registry
    local port="${2##*:}" path="$3" marker
    marker="$STATE/registry-$port/pushed-${path//[\/:]/-}"
    [[ -f "$marker" ]] && { [[ -z "$1" ]] || [[ "$(cat "$marker")" == "$1" ]]; } &&
        manifest_present "http://127.0.0.1:$port/v2/${path%:*}/manifests/${path##*:}" "${4:-}"
}

publish_pullable() {
    # Its own image id (same layer, another config), kept only in the registry: the tests pull,
    # use and remove it.
    local made
    pushed "" "$REGISTRY" "$PULLABLE_IMAGE" && return 0
    claim "$PULLABLE_IMAGE"
    made="$("$DOCKER" import --change 'CMD ["/pause"]' \
        --change 'ENV PATH=/bin KUBECORE_IMAGE=pullable' "$STATE/rootfs.tar" "$PULLABLE_IMAGE")"
    remember "$made"
    push_image "$PULLABLE_IMAGE" "$REGISTRY" "$PULLABLE_IMAGE"
    "$DOCKER" rmi "$PULLABLE_IMAGE" >/dev/null
}

push_image() {  # push_image LOCAL-IMAGE HOST:PORT REPOSITORY:TAG [auth]
    local local_image="$1" registry="$2" path="$3" creds="" config="$STATE/docker-config"
    local port="${2##*:}" ref="$2/$3" image_id marker
    marker="$STATE/registry-$port/pushed-${path//[\/:]/-}"
    image_id="$("$DOCKER" image inspect -f '{{.Id}}' "$local_image" 2>/dev/null || true)"
    [[ "${4:-}" == auth ]] && creds="$AUTH_USER:$AUTH_PASSWORD"
    pushed "$image_id" "$registry" "$path" "$creds" && return 0
    [[ -n "$image_id" ]] || die "$local_image is missing; remove $STATE and run up again"
    mkdir -p "$config"
    claim "$ref"
    "$DOCKER" tag "$local_image" "$ref"
    # A private client config: the credentials never land in ~/.docker/config.json, so the engine
    # has no credentials for the auth registry unless a pull passes them.
    if [[ -n "$creds" ]]; then
        echo "$AUTH_PASSWORD" | DOCKER_CONFIG="$config" "$DOCKER" login -u "$AUTH_USER" \
            --password-stdin "$registry" >"$STATE/login.log" 2>&1 ||
            die "docker login $registry failed: $(cat "$STATE/login.log")"
    fi
    log "pushing $ref"
    DOCKER_CONFIG="$config" "$DOCKER" push "$ref" >/dev/null
    [[ -n "$creds" ]] && DOCKER_CONFIG="$config" "$DOCKER" logout "$registry" >/dev/null
    # The pull tests must find the image only in the registry.
    "$DOCKER" rmi "$ref" >/dev/null
    echo "$image_id" >"$marker"
}

print_env() {
    cat <<EOF
export KUBECORE_TEST_ENGINE_STATE=$STATE
export KUBECORE_DOCKER_HOST=unix://$SOCK
export KUBECORE_TEST_IMAGE=$TEST_IMAGE
export KUBECORE_TEST_PAUSE_IMAGE=$PAUSE_IMAGE
export KUBECORE_TEST_REGISTRY=$REGISTRY
export KUBECORE_TEST_REGISTRY_IMAGE=$REGISTRY/$REGISTRY_IMAGE
export KUBECORE_TEST_PULLABLE_IMAGE=$REGISTRY/$PULLABLE_IMAGE
export KUBECORE_TEST_AUTH_REGISTRY=$AUTH_REGISTRY
export KUBECORE_TEST_AUTH_REGISTRY_IMAGE=$AUTH_REGISTRY/$REGISTRY_IMAGE
export KUBECORE_TEST_AUTH_USER=$AUTH_USER
export KUBECORE_TEST_AUTH_PASSWORD=$AUTH_PASSWORD
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

stop_pidfile() {  # stop_pidfile FILE NAME [LABEL]: the pid in FILE, if its command line mentions NAME
    if pid_alive "$1" "$2"; then
        stop_pid "$(cat "$1")" "${3:-$2}"
    fi
    rm -f "$1"
}

cmd_up() {
    [[ $EUID -eq 0 ]] || die "run as root (it installs packages, makes a bridge and starts dockerd)"
    mkdir -p "$STATE"
    install_packages
    start_engine
    build_image
    start_registry "$REGISTRY_PORT"
    start_registry "$AUTH_REGISTRY_PORT" auth
    push_image "$TEST_IMAGE" "$REGISTRY" "$REGISTRY_IMAGE"
    publish_pullable
    push_image "$TEST_IMAGE" "$AUTH_REGISTRY" "$REGISTRY_IMAGE" auth
    print_env >"$STATE/env"
    log "ready; environment in $STATE/env"
}

cmd_down() {
    stop_pidfile "$STATE/registry-$REGISTRY_PORT/pid" docker-registry
    stop_pidfile "$STATE/registry-$AUTH_REGISTRY_PORT/pid" docker-registry
    rm -f "$STATE"/registry-*/pushed-*
    if [[ -f "$STATE/stopped-system-registry" ]]; then
        systemctl start docker-registry || true
        rm -f "$STATE/stopped-system-registry"
    fi
    # Only the engine on this state's socket; its containers stop with it.
    stop_pidfile "$ENGINE_PID" "$SOCK" "dockerd on $SOCK"
    stop_pidfile "$MANAGED_CONTAINERD_PID" "$EXEC_ROOT" "containerd under $EXEC_ROOT"
    unmount_state
    remove_bridge
    if pid_alive "$STATE/dockerd.pid" dockerd; then
        log "left running: dockerd $(cat "$STATE/dockerd.pid") on /var/run/docker.sock, started by an" \
            "older version of this script on the machine's own socket (stop it yourself if it is not in use)"
    fi
    rm -f "$STATE/env"
}

case "${1:-}" in
    up) cmd_up ;;
    down) cmd_down ;;
    env) print_env ;;
    *) echo "usage: $0 up|down|env" >&2; exit 2 ;;
esac
