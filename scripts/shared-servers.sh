#!/usr/bin/env bash
# Throwaway servers for the shared store backend: PostgreSQL 15 and a single-node Ceph cluster
# with radosgw (S3), on 127.0.0.1 only, in one temporary directory.
#
#   scripts/shared-servers.sh start DIR   starts both; writes DIR/env (ATTACHE_TEST_POSTGRES,
#                                         ATTACHE_TEST_S3_*), prints nothing else on success
#   scripts/shared-servers.sh stop DIR    stops both and removes DIR
#   scripts/shared-servers.sh install     installs the Debian packages when missing
#
# Ports: PG_PORT (default 21432), S3_PORT (default 25480), MON_PORT (default 29789); callers pick
# ports below the ephemeral range (32768 and up), where an outgoing connection could hold them.
# The servers stand in for other machines: where this user may (root), they run at nice -10, so a
# machine kept busy by the tests beside them (or by anything else) does not stall them for long.
set -euo pipefail
command=${1:?usage: shared-servers.sh start|stop DIR | install}

packages=(postgresql-15 ceph-mon ceph-osd radosgw ceph-common)

install() {
    local missing=()
    for p in "${packages[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    if ! command -v apt-get >/dev/null; then
        echo "attache: the shared-backend servers need ${missing[*]} and there is no apt-get" >&2
        return 1
    fi
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    echo "attache: installing ${missing[*]}" >&2
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

pg_bin=/usr/lib/postgresql/15/bin
# Every thread a server starts inherits the nice value it was started with.
boost=()
[ "$(nice -n -10 nice 2>/dev/null)" -lt "$(nice)" ] && boost=(nice -n -10)
as_postgres() {
    if [ "$(id -u)" -eq 0 ]; then "${boost[@]}" runuser -u postgres -- "$@"; else "${boost[@]}" "$@"; fi
}

start() {
    local dir=$1
    local pg_port=${PG_PORT:-21432} s3_port=${S3_PORT:-25480} mon_port=${MON_PORT:-29789}
    mkdir -p "$dir/pg" "$dir/ceph/mon" "$dir/ceph/osd" "$dir/ceph/run"
    chmod 755 "$dir"
    [ "$(id -u)" -eq 0 ] && chown postgres "$dir/pg"
    chmod 700 "$dir/pg"

    # PostgreSQL: trust on a private socket directory and 127.0.0.1, no fsync (throwaway).
    if ! as_postgres "$pg_bin/initdb" -D "$dir/pg" -A trust -U postgres >"$dir/pg-init.log" 2>&1; then
        echo "attache: shared-servers: initdb failed:" >&2
        tail -20 "$dir/pg-init.log" >&2
        exit 1
    fi
    if ! as_postgres "$pg_bin/pg_ctl" -D "$dir/pg" -l "$dir/pg/server.log" -w -o \
        "-p $pg_port -k $dir/pg -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=300" \
        start >"$dir/pg-start.log" 2>&1; then
        echo "attache: shared-servers: PostgreSQL did not start:" >&2
        tail -20 "$dir/pg-start.log" "$dir/pg/server.log" >&2
        exit 1
    fi

    # Ceph: one monitor, one memstore OSD, no cephx, one replica; radosgw on 127.0.0.1.
    local fsid conf osd_uuid
    fsid=$(cat /proc/sys/kernel/random/uuid)
    osd_uuid=$(cat /proc/sys/kernel/random/uuid)
    conf=$dir/ceph/ceph.conf
    cat >"$conf" <<EOF
[global]
fsid = $fsid
mon host = v1:127.0.0.1:$mon_port
auth cluster required = none
auth service required = none
auth client required = none
auth allow insecure global id reclaim = true
ms mon client mode = crc
ms mon cluster mode = crc
ms mon service mode = crc
osd pool default size = 1
osd pool default min size = 1
mon allow pool size one = true
osd crush chooseleaf type = 0
osd objectstore = memstore
memstore device bytes = 1073741824
paxos propose interval = 0.05
run dir = $dir/ceph/run
log file = $dir/ceph/\$name.log
admin socket = $dir/ceph/run/\$name.asok
pid file = $dir/ceph/run/\$name.pid
keyring = /dev/null
rgw dns name = 127.0.0.1
[mon.a]
mon data = $dir/ceph/mon
[osd.0]
osd data = $dir/ceph/osd
EOF
    local log=$dir/start.log
    # Each step until it succeeds (the monitor takes a moment to accept commands), or a clear
    # error with what the step printed.
    step() {
        local what=$1
        shift
        for _ in $(seq 1 100); do
            "$@" >>"$log" 2>&1 && return 0
            sleep 0.1
        done
        echo "attache: shared-servers: '$what' failed; its output:" >&2
        tail -20 "$log" >&2
        exit 1
    }
    step monmaptool monmaptool --create --add a "v1:127.0.0.1:$mon_port" --fsid "$fsid" "$dir/ceph/monmap"
    step "ceph-mon --mkfs" ceph-mon --mkfs -i a --monmap "$dir/ceph/monmap" -c "$conf"
    step ceph-mon "${boost[@]}" ceph-mon -i a -c "$conf"
    step "ceph osd new" timeout 20 ceph -c "$conf" --connect-timeout 10 osd new "$osd_uuid"
    step "ceph-osd --mkfs" ceph-osd -i 0 -c "$conf" --mkfs --osd-uuid "$osd_uuid"
    step ceph-osd "${boost[@]}" ceph-osd -i 0 -c "$conf"
    step radosgw "${boost[@]}" radosgw -c "$conf" -n client.rgw.a --rgw-frontends "beast endpoint=127.0.0.1:$s3_port tcp_nodelay=1"
    local access secret
    access=attache$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')
    secret=$(od -An -N20 -tx1 /dev/urandom | tr -d ' \n')
    step "radosgw-admin user create" timeout 30 radosgw-admin -c "$conf" user create --uid=attache \
        --display-name=attache --access-key="$access" --secret="$secret"
    step "S3 answers" curl -s -o /dev/null "http://127.0.0.1:$s3_port/"
    cat >"$dir/env" <<EOF
ATTACHE_TEST_POSTGRES=postgres://postgres@127.0.0.1:$pg_port/postgres
ATTACHE_TEST_S3_ENDPOINT=http://127.0.0.1:$s3_port
ATTACHE_TEST_S3_REGION=us-east-1
ATTACHE_TEST_S3_ACCESS_KEY=$access
ATTACHE_TEST_S3_SECRET_KEY=$secret
EOF
}

stop() {
    local dir=$1
    [ -d "$dir" ] || return 0
    if [ -f "$dir/pg/postmaster.pid" ]; then
        as_postgres "$pg_bin/pg_ctl" -D "$dir/pg" -m immediate -w stop >/dev/null 2>&1 || true
    fi
    # A throwaway memstore cluster keeps nothing worth a graceful stop, and radosgw waits
    # forever on a monitor that is already gone: SIGKILL them all, then wait until they are.
    for pidfile in "$dir"/ceph/run/*.pid; do
        [ -f "$pidfile" ] && kill -KILL "$(cat "$pidfile")" 2>/dev/null || true
    done
    pkill -KILL -f -- "-c $dir/ceph/ceph.conf" 2>/dev/null || true
    for _ in $(seq 1 100); do
        pgrep -f -- "-c $dir/ceph/ceph.conf" >/dev/null || break
        sleep 0.05
    done
    rm -rf "$dir"
}

case $command in
install) install ;;
start) start "${2:?DIR}" ;;
stop) stop "${2:?DIR}" ;;
*)
    echo "usage: shared-servers.sh start|stop DIR | install" >&2
    exit 2
    ;;
esac
