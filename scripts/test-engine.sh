#!/usr/bin/env bash
# The project's own test engine: a Docker engine, a busybox test image and two local registries.
#
#   scripts/test-engine.sh up     install what is missing, start what is not running (idempotent)
#   scripts/test-engine.sh down   stop only what `up` started
#   scripts/test-engine.sh env    print shell exports for the tests
#
# Nothing is ever pulled from the internet: the image is a `docker import` of /bin/busybox.
# The engine is machine-wide, and so is its state: $KUBECORE_TEST_ENGINE_STATE, by default
# /var/tmp/kubecore-test-engine, shared by every checkout on the machine.
set -euo pipefail

STATE="${KUBECORE_TEST_ENGINE_STATE:-/var/tmp/kubecore-test-engine}"
DOCKER=/usr/bin/docker
SOCK=/var/run/docker.sock
export DOCKER_HOST="unix://$SOCK"

TEST_IMAGE="busybox:1.35"
PAUSE_IMAGE="registry.k8s.io/pause:3.9"
REGISTRY="localhost:5000"
AUTH_REGISTRY="localhost:5001"
AUTH_USER="kubecore"
AUTH_PASSWORD="kubecore-test-password"
REGISTRY_IMAGE="kubecore/busybox:1.35"
# A distinct image (its own id, same layer) that only the pull-use-remove tests touch.
PULLABLE_IMAGE="kubecore/pullable:1"
PACKAGES=(docker.io busybox-static docker-registry apache2-utils)
APPLETS=(sh ash sleep httpd wget cat echo true false ls mkdir rm test env kill nc dd head tail
         seq printf grep sed touch date id hostname ps sync yes wc tr cut expr uname mount
         stat chmod ln cp mv pwd timeout usleep)

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

MANAGED_CONTAINERD_PID=/var/run/docker/containerd/containerd.pid

dockerd_answers_or_exited() {
    engine_answers || ! pid_alive "$STATE/dockerd.pid" dockerd
}

start_engine() {
    local attempt
    if engine_answers; then
        return 0
    fi
    # After dockerd was killed (SIGKILL), the containerd it managed can linger without
    # answering; the next dockerd then waits on it and gives up ("timeout waiting for
    # containerd to start"). Such a containerd is stopped and dockerd started again.
    for attempt in 1 2 3; do
        log "starting dockerd (log: $STATE/dockerd.log)"
        setsid dockerd --host "unix://$SOCK" >>"$STATE/dockerd.log" 2>&1 </dev/null &
        echo $! >"$STATE/dockerd.pid"
        wait_until 90 "dockerd (or its exit)" dockerd_answers_or_exited && engine_answers && return 0
        log "dockerd did not come up (attempt $attempt); stopping it and its containerd"
        stop_pidfile "$STATE/dockerd.pid" dockerd
        stop_pidfile "$MANAGED_CONTAINERD_PID" containerd
    done
    die "dockerd did not answer after 3 attempts; see $STATE/dockerd.log"
}

build_image() {
    local rootfs="$STATE/rootfs" tarball="$STATE/rootfs.tar" applet available digest current
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
    [[ -L "$rootfs/bin/sh" && -L "$rootfs/bin/sleep" ]] || die "the test image's rootfs has no /bin/sh or /bin/sleep"
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
    current="$("$DOCKER" image inspect -f '{{.Id}}' "$TEST_IMAGE" 2>/dev/null || true)"
    if [[ -z "$current" || ! -f "$STATE/image.stamp" || "$(cat "$STATE/image.stamp")" != "$digest $current" ]]; then
        log "importing $TEST_IMAGE"
        current="$("$DOCKER" import \
            --change 'CMD ["/pause"]' \
            --change 'ENV PATH=/bin' \
            "$tarball" "$TEST_IMAGE")"
        echo "$digest $current" >"$STATE/image.stamp"
    fi
    "$DOCKER" tag "$TEST_IMAGE" "$PAUSE_IMAGE"
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
    pushed "" "$REGISTRY" "$PULLABLE_IMAGE" && return 0
    "$DOCKER" import --change 'CMD ["/pause"]' --change 'ENV PATH=/bin KUBECORE_IMAGE=pullable' \
        "$STATE/rootfs.tar" "$PULLABLE_IMAGE" >/dev/null
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
    [[ $EUID -eq 0 ]] || die "run as root (it installs packages and starts dockerd)"
    mkdir -p "$STATE"
    install_packages
    start_engine
    build_image
    start_registry 5000
    start_registry 5001 auth
    push_image "$TEST_IMAGE" "$REGISTRY" "$REGISTRY_IMAGE"
    publish_pullable
    push_image "$TEST_IMAGE" "$AUTH_REGISTRY" "$REGISTRY_IMAGE" auth
    print_env >"$STATE/env"
    log "ready; environment in $STATE/env"
}

cmd_down() {
    stop_pidfile "$STATE/registry-5000/pid" docker-registry
    stop_pidfile "$STATE/registry-5001/pid" docker-registry
    rm -f "$STATE"/registry-*/pushed-*
    if [[ -f "$STATE/stopped-system-registry" ]]; then
        systemctl start docker-registry || true
        rm -f "$STATE/stopped-system-registry"
    fi
    stop_pidfile "$STATE/dockerd.pid" dockerd
    rm -f "$STATE/env"
}

case "${1:-}" in
    up) cmd_up ;;
    down) cmd_down ;;
    env) print_env ;;
    *) echo "usage: $0 up|down|env" >&2; exit 2 ;;
esac
