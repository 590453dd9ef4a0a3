# netns harness: K network namespaces, each joined by a veth pair to a
# bridge in the root namespace, on 198.18.0.0/24 (the benchmarking range):
# the root side is 198.18.0.254, host i is 198.18.0.i.  Names are unique
# per run (kn<pid>h<i>); a trap removes everything created, on success,
# failure or interrupt.  Runs that use the harness at the same time are
# serialized by a lock, since they share the address range.
#
#   source tests/netns/lib.sh
#   netns_setup NAME K || exit 0     # prints "SKIP NAME: why" when it cannot
#   ... ${NETNS_HOSTS[0]} ... ${NETNS_HOSTS[K-1]}
#
# NETNS_HOSTS: the namespace names; NETNS_ADDRS: their addresses.

NETNS_HOSTS=()
NETNS_ADDRS=()
NETNS_BRIDGE=""
NETNS_LOCK_FD=""

netns_cleanup() {
    local ns
    for ns in "${NETNS_HOSTS[@]}"; do
        # processes left in the namespace would keep it alive
        ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
        ip netns del "$ns" 2>/dev/null
    done
    for ns in "${NETNS_HOSTS[@]}"; do
        ip link del "${ns/kn/kv}r" 2>/dev/null
    done
    [ -n "$NETNS_BRIDGE" ] && ip link del "$NETNS_BRIDGE" 2>/dev/null
    NETNS_HOSTS=()
    NETNS_BRIDGE=""
    if [ -n "$NETNS_LOCK_FD" ]; then
        eval "exec $NETNS_LOCK_FD>&-"
        NETNS_LOCK_FD=""
    fi
}

netns_setup() {
    local name=$1 k=$2 i ns why
    if [ "$(id -u)" != 0 ]; then
        echo "SKIP $name: network namespaces need root"
        return 1
    fi
    if ! command -v ip >/dev/null; then
        echo "SKIP $name: iproute2 (ip) is not installed"
        return 1
    fi
    trap netns_cleanup EXIT
    trap 'netns_cleanup; exit 130' INT
    trap 'netns_cleanup; exit 143' TERM
    local lockdir=/run/lock
    [ -d "$lockdir" ] && [ -w "$lockdir" ] || lockdir=/tmp
    exec {NETNS_LOCK_FD}>"$lockdir/knit-netns.lock"
    if ! flock -w 300 "$NETNS_LOCK_FD"; then
        echo "SKIP $name: another netns test held the lock for 300 s"
        return 1
    fi
    NETNS_BRIDGE="kb$$"
    if ! why=$(ip link add "$NETNS_BRIDGE" type bridge 2>&1); then
        NETNS_BRIDGE=""
        echo "SKIP $name: cannot create a bridge: $why"
        netns_cleanup
        return 1
    fi
    ip addr add 198.18.0.254/24 dev "$NETNS_BRIDGE" && ip link set "$NETNS_BRIDGE" up || {
        echo "FAIL $name: cannot configure bridge $NETNS_BRIDGE"
        return 1
    }
    for i in $(seq 1 "$k"); do
        ns="kn$$h$i"
        if ! why=$(ip netns add "$ns" 2>&1); then
            echo "SKIP $name: cannot create a network namespace: $why"
            netns_cleanup
            return 1
        fi
        NETNS_HOSTS+=("$ns")
        NETNS_ADDRS+=("198.18.0.$i")
        # veth names: kv<pid>h<i>r (root side), kv<pid>h<i>n (namespace side)
        ip link add "kv$$h${i}r" type veth peer name "kv$$h${i}n" &&
            ip link set "kv$$h${i}n" netns "$ns" &&
            ip link set "kv$$h${i}r" master "$NETNS_BRIDGE" &&
            ip link set "kv$$h${i}r" up &&
            ip -n "$ns" link set lo up &&
            ip -n "$ns" addr add "198.18.0.$i/24" dev "kv$$h${i}n" &&
            ip -n "$ns" link set "kv$$h${i}n" up || {
            echo "FAIL $name: cannot set up namespace $ns"
            return 1
        }
    done
    return 0
}
