#!/usr/bin/env bash
# The main job, end to end on one machine: start ferryd in a "node" network namespace (standing in for
# the host), then take a pod namespace through ADD → CHECK → DEL with the real ferry-cni binary,
# exactly as a container runtime runs it; then what Ferry is for: a delegated NIC (a veth end in the
# node namespace, standing in for a NIC) moves into a second pod and is renamed there, ferryd is killed,
# the pod's DEL still exits 0 and the device is back on the node under its own name; the next ferryd
# applies the queued DEL. Prints what happened. Everything it creates is removed on exit; the machine's
# own interfaces are never touched. Needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "${FERRY_SKIP_SETUP:-0}" = 1 ] || ./scripts/setup.sh >/dev/null

id="$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')"
node_ns="ferry-demo-node-$id"
pod_ns="ferry-demo-pod-$id"
pod2_ns="ferry-demo-pod2-$id"
dir="/tmp/ferry-demo-$id"
ferryd_pid=""
cleanup() {
  local rc=$?
  # A failed demo shows ferryd's own account before its directory goes.
  if [ "$rc" != 0 ] && [ -f "$dir/ferryd.log" ]; then
    echo "demo failed (exit $rc); ferryd's log:" >&2
    tail -n 30 "$dir/ferryd.log" >&2
  fi
  [ -n "$ferryd_pid" ] && kill "$ferryd_pid" 2>/dev/null && wait "$ferryd_pid" 2>/dev/null || true
  ip netns del "$pod_ns" 2>/dev/null || true
  ip netns del "$pod2_ns" 2>/dev/null || true
  ip netns del "$node_ns" 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
in_node() { nsenter --net="/var/run/netns/$node_ns" "$@"; }
in_pod() { nsenter --net="/var/run/netns/$pod_ns" "$@"; }
in_pod2() { nsenter --net="/var/run/netns/$pod2_ns" "$@"; }
pretty() { node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{if(s.trim())console.log(JSON.stringify(JSON.parse(s),null,2))})'; }

mkdir -p "$dir"
ip netns add "$node_ns"
ip netns add "$pod_ns"
ip netns add "$pod2_ns"
in_node ip link set lo up
in_node ip addr add 192.0.2.1/32 dev lo
in_pod ip link set lo up
in_pod2 ip link set lo up
# The node's second NIC: a veth end (the kernels here cannot make dummy devices), known to ferryd by its MAC.
nic_mac=02:fe:00:00:de:01
in_node ip link add ens5 address "$nic_mac" type veth peer name ens5-wire

step "start ferryd in $node_ns"
cat >"$dir/ferryd.json" <<JSON
{
  "socket": "$dir/run/ferryd.sock",
  "database": "$dir/lib/ferry.db",
  "deleteQueue": "$dir/lib/delete-queue",
  "networks": [
    { "name": "ferry", "ipv4": { "subnet": "10.244.1.0/24" }, "ipv6": { "subnet": "fd00:10:244:1::/64" } }
  ],
  "delegatedDevices": [ { "mac": "$nic_mac", "group": "frontend" } ]
}
JSON
# Not through in_node: a backgrounded function runs in a subshell, and $! would be that subshell's PID
# (killing it would leave ferryd running). nsenter execs ferryd, so $! is ferryd itself.
start_ferryd() {
  rm -f "$dir/ready"
  nsenter --net="/var/run/netns/$node_ns" dist/bin/ferryd --config "$dir/ferryd.json" --ready-file "$dir/ready" \
    >>"$dir/ferryd.log" 2>&1 &
  ferryd_pid=$!
  for _ in $(seq 1 100); do [ -f "$dir/ready" ] && break; sleep 0.1; done
  [ -f "$dir/ready" ] || { echo "ferryd was not ready within 10 s" >&2; exit 1; }
  echo "ferryd pid $ferryd_pid, socket $dir/run/ferryd.sock"
}
start_ferryd

conf() {
  printf '{"cniVersion":"1.1.0","name":"ferry","type":"ferry-cni","daemonSocket":"%s","logFile":"%s","deleteQueue":"%s"%s}' \
    "$dir/run/ferryd.sock" "$dir/cni.log" "$dir/lib/delete-queue" "${1:-}"
}
# cni COMMAND STDIN [POD_NETNS CONTAINER_ID]
cni() {
  local cmd="$1" stdin="$2" netns="${3:-$pod_ns}" cid="${4:-demo$id}"
  printf '%s' "$stdin" | in_node env -i PATH="$PATH" CNI_COMMAND="$cmd" CNI_CONTAINERID="$cid" \
    CNI_NETNS="/var/run/netns/$netns" CNI_IFNAME=eth0 CNI_PATH="$PWD/dist/bin" \
    CNI_ARGS="IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=demo" dist/bin/ferry-cni
}

step "ADD: ferry-cni creates eth0 in $pod_ns"
result="$(cni ADD "$(conf)")"
echo "$result" | pretty
step "the pod as the kernel sees it"
in_pod ip -br addr show dev eth0
in_pod ip route show
in_pod ip -6 route show default
step "the pod pings the node (192.0.2.1)"
in_pod ping -c 2 -W 1 192.0.2.1 | tail -2
step "ferryctl endpoints: what ferryd holds"
dist/bin/ferryctl --socket "$dir/run/ferryd.sock" endpoints
dist/bin/ferryctl --socket "$dir/run/ferryd.sock" ipam

step "CHECK with the ADD result as prevResult"
cni CHECK "$(conf ",\"prevResult\":$result")" && echo "CHECK passed (exit 0, no output)"

step "DEL, twice (DEL is idempotent)"
cni DEL "$(conf)" && cni DEL "$(conf)" && echo "both DELs exit 0"
step "left behind"
echo "links in the node namespace: $(in_node ip -br link show | awk '{print $1}' | tr '\n' ' ')"
echo "links in the pod namespace:  $(in_pod ip -br link show | awk '{print $1}' | tr '\n' ' ')"
echo "what ferryd holds:"
dist/bin/ferryctl --socket "$dir/run/ferryd.sock" endpoints
dist/bin/ferryctl --socket "$dir/run/ferryd.sock" ipam
echo "shim log: $(wc -l <"$dir/cni.log") lines in $dir/cni.log (removed on exit)"

step "a delegated NIC: ADD moves the node's ens5 ($nic_mac) into $pod2_ns, renamed net1"
echo "the node's links before: $(in_node ip -br link show | awk '{print $1}' | tr '\n' ' ')"
nics=',"delegatedNICs":{"group":"frontend","count":1}'
cni ADD "$(conf "$nics")" "$pod2_ns" "demo2$id" | pretty
echo "in the pod:"
in_pod2 ip -br link show
echo "the node's links now: $(in_node ip -br link show | awk '{print $1}' | tr '\n' ' ')"
dist/bin/ferryctl --socket "$dir/run/ferryd.sock" devices

step "ferryd is killed (SIGKILL): the pod is deleted anyway"
kill -9 "$ferryd_pid"
wait "$ferryd_pid" 2>/dev/null || true
ferryd_pid=""
cni DEL "$(conf "$nics")" "$pod2_ns" "demo2$id" && echo "DEL exit 0 with ferryd down: the release is queued"
echo "in the pod: $(in_pod2 ip -br link show | awk '{print $1}' | tr '\n' ' ')"
echo "on the node: $(in_node ip -br link show dev ens5)"
[ "$(in_node ip -br link show dev ens5 | awk '{print $3}')" = "$nic_mac" ] || { echo "ens5 did not come home" >&2; exit 1; }
echo "ens5 is home, under its own name and MAC"
echo "entries queued for the next ferryd: $(find "$dir/lib/delete-queue" -maxdepth 1 -name '*.json' | wc -l)"

step "the next ferryd applies the queued DEL before it serves"
start_ferryd
dist/bin/ferryctl --socket "$dir/run/ferryd.sock" queue
dist/bin/ferryctl --socket "$dir/run/ferryd.sock" endpoints
dist/bin/ferryctl --socket "$dir/run/ferryd.sock" devices
