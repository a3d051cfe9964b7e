#!/usr/bin/env bash
# kube-up.sh: a real single-node Kubernetes cluster on this machine, with no
# registry, for the Kubernetes runtime's tests (docs/operations.md, "The test cluster").
#
#   scripts/kube-up.sh up     build what is missing, start the cluster, wait
#                             for the node, import the images
#   scripts/kube-up.sh build  only build the Kubernetes binaries
#   scripts/kube-up.sh down   stop it (state is kept; `up` starts it again)
#   scripts/kube-up.sh purge  stop it and remove its state
#
# What runs, all as root on this machine, each API on 127.0.0.1 only:
#   - etcd (Debian's etcd-server) on 127.0.0.1:12379;
#   - kube-apiserver, kube-controller-manager, kube-scheduler and kubelet,
#     built from k8s.io/kubernetes at KUBE_VERSION through the Go module
#     proxy (a generated module that replaces the staging modules with
#     their releases) into $GLASSROOM_CACHE/kubernetes-$KUBE_VERSION and
#     reused after (about 6 minutes the first time);
#   - the API server on https://127.0.0.1:16443, Pod Security admission
#     and Node,RBAC authorization; clients authenticate with static tokens
#     (admin, node, scheduler, controller-manager) written with the PKI
#     under $KUBE_STATE/pki;
#   - Debian's containerd on its own socket and root (Docker's is not
#     touched), the CNI bridge plugin from containernetworking-plugins on
#     the bridge glassroom-kube0 (10.244.0.0/24, no masquerade: nothing a
#     pod sends leaves this machine), and a pause image built here;
#   - glassroom's seccomp profile as the kubelet's Localhost profile
#     glassroom-kernel.json;
#   - the kernel image (images/python) and the gateway image (images/gateway,
#     the agent's) imported from Docker into containerd's k8s.io namespace.
#
# The admin kubeconfig is $KUBE_STATE/admin.kubeconfig.
set -euo pipefail
cd "$(dirname "$0")/.."
KUBE_VERSION=${KUBE_VERSION:-v1.34.2}
CACHE=${GLASSROOM_CACHE:-/var/cache/glassroom}
BIN=$CACHE/kubernetes-$KUBE_VERSION
KUBE_STATE=${KUBE_STATE:-/var/lib/glassroom-kube}
RUN=/run/glassroom-kube
LOGS=$KUBE_STATE/logs
NODE=${KUBE_NODE:-glassroom-node}
API=https://127.0.0.1:16443
POD_CIDR=10.244.0.0/24
SERVICE_CIDR=10.97.0.0/24
BRIDGE=glassroom-kube0
# The node's address: the kubelet and the API server refuse a loopback one,
# so it is the pods' gateway on the bridge, made here before the CNI
# plugin finds it (not routed anywhere else).
NODE_IP=10.244.0.1
API_SERVICE_IP=10.97.0.1 # the kubernetes Service: the first address of SERVICE_CIDR
PAUSE_IMAGE=registry.k8s.io/pause:3.10
export PATH=/usr/local/go/bin:$PATH

log() { echo "kube-up: $*" >&2; }

build() {
  [ -x "$BIN/kubelet" ] && [ -x "$BIN/kube-apiserver" ] && [ -x "$BIN/kube-scheduler" ] && [ -x "$BIN/kube-controller-manager" ] && return 0
  local mod staging minor
  mod=$(mktemp -d /tmp/glassroom-kubebuild.XXXXXX)
  log "building Kubernetes $KUBE_VERSION into $BIN (several minutes, once)"
  (cd "$mod" && go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" >/dev/null)
  staging=$(go env GOMODCACHE)/k8s.io/kubernetes@$KUBE_VERSION/go.mod
  minor=${KUBE_VERSION#v1.}; minor=${minor%%.*}
  {
    printf 'module glassroom.local/kubebuild\n\ngo 1.24.0\n\ngodebug default=go1.24\n\nrequire k8s.io/kubernetes %s\n\nreplace (\n' "$KUBE_VERSION"
    # Each staging module (k8s.io/api, ... => ./staging/...) at its release.
    awk -v v="v0.${KUBE_VERSION#v1.}" '$2 == "=>" && $3 ~ /^\.\/staging\// {print "\t" $1 " => " $1 " " v}' "$staging"
    printf ')\n'
  } >"$mod/go.mod"
  printf '//go:build tools\n\npackage kubebuild\n\nimport (\n\t_ "k8s.io/kubernetes/cmd/kube-apiserver"\n\t_ "k8s.io/kubernetes/cmd/kube-controller-manager"\n\t_ "k8s.io/kubernetes/cmd/kube-scheduler"\n\t_ "k8s.io/kubernetes/cmd/kubelet"\n)\n' >"$mod/tools.go"
  (cd "$mod" && go mod tidy >/dev/null 2>&1)
  mkdir -p "$BIN.partial"
  local c
  for c in kube-apiserver kube-controller-manager kube-scheduler kubelet; do
    (cd "$mod" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor" -o "$BIN.partial/$c" "k8s.io/kubernetes/cmd/$c")
  done
  rm -rf "$BIN" && mv "$BIN.partial" "$BIN"
  rm -rf "$mod"
}

packages() {
  local need=()
  command -v containerd >/dev/null || need+=(containerd)
  [ -x /usr/lib/cni/bridge ] || need+=(containernetworking-plugins)
  command -v etcd >/dev/null || need+=(etcd-server)
  command -v openssl >/dev/null || need+=(openssl)
  command -v conntrack >/dev/null || need+=(conntrack)
  command -v iptables >/dev/null || need+=(iptables)
  command -v socat >/dev/null || need+=(socat)
  [ ${#need[@]} -eq 0 ] && return 0
  log "installing ${need[*]}"
  "$(dirname "${BASH_SOURCE[0]}")/apt-install.sh" "${need[@]}" >/dev/null
}

pki() {
  local p=$KUBE_STATE/pki
  [ -f "$p/tokens.csv" ] && return 0
  mkdir -p "$p" && chmod 700 "$p"
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$p/ca.key" -out "$p/ca.crt" -days 3650 -subj "/CN=glassroom-kube-ca" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -keyout "$p/apiserver.key" -out "$p/apiserver.csr" -subj "/CN=kube-apiserver" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,IP:10.97.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:localhost\n' >"$p/apiserver.ext"
  openssl x509 -req -in "$p/apiserver.csr" -CA "$p/ca.crt" -CAkey "$p/ca.key" -CAcreateserial -out "$p/apiserver.crt" -days 3650 -extfile "$p/apiserver.ext" 2>/dev/null
  openssl genrsa -out "$p/sa.key" 2048 2>/dev/null
  openssl rsa -in "$p/sa.key" -pubout -out "$p/sa.pub" 2>/dev/null
  local who group
  : >"$p/tokens.csv.new"
  for who in admin:system:masters node:system:nodes scheduler: controller-manager:; do
    group=${who#*:}
    local name=${who%%:*} user
    case $name in
      admin) user=glassroom-admin ;;
      node) user=system:node:$NODE ;;
      scheduler) user=system:kube-scheduler ;;
      controller-manager) user=system:kube-controller-manager ;;
    esac
    local token
    token=$(openssl rand -hex 24)
    printf '%s\n' "$token" >"$p/$name.token"
    printf '%s,%s,%s,"%s"\n' "$token" "$user" "$user" "$group" >>"$p/tokens.csv.new"
  done
  mv "$p/tokens.csv.new" "$p/tokens.csv"
}

kubeconfig() { # name token-file
  cat >"$KUBE_STATE/$1.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: glassroom
  cluster:
    server: $API
    certificate-authority: $KUBE_STATE/pki/ca.crt
users:
- name: $1
  user:
    tokenFile: $2
contexts:
- name: glassroom
  context: {cluster: glassroom, user: $1}
current-context: glassroom
EOF
}

# running NAME: whether the component NAME runs. Its pid file is not
# enough: the pid of a component killed without its file being removed can
# belong to another process by now (a long-lived test machine reuses
# pids), so the process must also be the component's program.
running() {
  local pid prog want
  [ -f "$RUN/$1.pid" ] || return 1
  pid=$(cat "$RUN/$1.pid")
  kill -0 "$pid" 2>/dev/null || return 1
  case $1 in api-forwarder) want=socat ;; *) want=$1 ;; esac
  prog=$(tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | head -n 1)
  [ "${prog##*/}" = "$want" ]
}

start() { # name command...
  local name=$1; shift
  running "$name" && return 0
  setsid "$@" >>"$LOGS/$name.log" 2>&1 </dev/null &
  echo $! >"$RUN/$name.pid"
}

# api_route lets pods reach the API server as in any cluster, at the
# kubernetes Service (10.97.0.1:443, what KUBERNETES_SERVICE_HOST says; its
# certificate names that address): a DNAT rule on the bridge sends it to a
# forwarder on the node's bridge address, which the API server (listening on
# loopback only) is reached through. No kube-proxy: no other Service routes
# (the tests reach pods at their addresses). The gateway pods of deploy/
# need it; a kernel pod has no token (and the NetworkPolicy, where
# enforced, keeps it off).
api_route() {
  iptables -t nat -C PREROUTING -i "$BRIDGE" -d "$API_SERVICE_IP" -p tcp --dport 443 -j DNAT --to-destination "$NODE_IP:16443" 2>/dev/null ||
    iptables -t nat -A PREROUTING -i "$BRIDGE" -d "$API_SERVICE_IP" -p tcp --dport 443 -j DNAT --to-destination "$NODE_IP:16443"
  start api-forwarder socat "TCP-LISTEN:16443,bind=$NODE_IP,fork,reuseaddr" TCP:127.0.0.1:16443
  local endpoints
  endpoints=$(printf '{"apiVersion":"v1","kind":"Endpoints","metadata":{"name":"kubernetes","namespace":"default"},"subsets":[{"addresses":[{"ip":"%s"}],"ports":[{"name":"https","port":16443,"protocol":"TCP"}]}]}' "$NODE_IP")
  api_get /api/v1/namespaces/default/endpoints/kubernetes >/dev/null ||
    api_send POST /api/v1/namespaces/default/endpoints "$endpoints" >/dev/null
}

wait_for() { # what seconds command...
  local what=$1 secs=$2; shift 2
  local i
  for i in $(seq 1 $((secs * 5))); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  log "$what did not come up within ${secs}s; its log: $LOGS"
  return 1
}

api_get() { curl -fsS --cacert "$KUBE_STATE/pki/ca.crt" -H "Authorization: Bearer $(cat "$KUBE_STATE/pki/admin.token")" "$API$1"; }
api_send() { # method path json
  curl -fsS --cacert "$KUBE_STATE/pki/ca.crt" -H "Authorization: Bearer $(cat "$KUBE_STATE/pki/admin.token")" \
    -H 'Content-Type: application/json' -X "$1" --data "$3" "$API$2"
}

node_ready() { api_get "/api/v1/nodes/$NODE" | grep -A1 '"type": "Ready"' | grep -q '"status": "True"'; }

containerd_config() {
  mkdir -p "$KUBE_STATE/containerd" "$KUBE_STATE/cni/net.d"
  cat >"$KUBE_STATE/containerd/config.toml" <<EOF
version = 2
root = "$KUBE_STATE/containerd/root"
state = "$RUN/containerd"
[grpc]
  address = "$RUN/containerd.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  enable_selinux = false
  # The kubelet asks for negative OOM scores (-998 for a pod's sandbox,
  # -997 for a Guaranteed container); on machines that refuse lowering a
  # score (this one: "I/O error"), runc cannot start them. Clamped to
  # containerd's own score instead.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$KUBE_STATE/cni/net.d"
EOF
  cat >"$KUBE_STATE/cni/net.d/10-glassroom.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "glassroom-kube",
  "plugins": [
    {"type": "bridge", "bridge": "$BRIDGE", "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "$POD_CIDR"}]], "routes": [{"dst": "$SERVICE_CIDR"}], "dataDir": "$KUBE_STATE/cni/ipam"}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF
}

kubelet_config() {
  cat >"$KUBE_STATE/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: $KUBE_STATE/pki/ca.crt}
authorization: {mode: AlwaysAllow}
cgroupDriver: cgroupfs
failSwapOn: false
failCgroupV1: false
containerRuntimeEndpoint: unix://$RUN/containerd.sock
podCIDR: $POD_CIDR
maxPods: 250
resolvConf: /etc/resolv.conf
serializeImagePulls: false
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
seccompDefault: false
EOF
}

# The pause image: one static binary that waits for a signal and reaps
# children (images/pause), from scratch.
pause_image() {
  if ctr_k8s images ls -q | grep -qx "$PAUSE_IMAGE"; then return 0; fi
  local d
  d=$(mktemp -d)
  gcc -static -Os -o "$d/pause" images/pause/pause.c
  printf 'FROM scratch\nCOPY pause /pause\nUSER 65535:65535\nENTRYPOINT ["/pause"]\n' >"$d/Dockerfile"
  docker build -q -t "$PAUSE_IMAGE" "$d" >/dev/null
  docker save "$PAUSE_IMAGE" | ctr_k8s images import - >/dev/null
  rm -rf "$d"
}

ctr_k8s() { ctr --address "$RUN/containerd.sock" -n k8s.io "$@"; }

# import_image name: from Docker into containerd when its id differs,
# unpacked now: otherwise the first pod of a new image unpacks it while the
# pods created beside it wait (28 s for the kernel image with the JDK, under
# load: past the deadline of the sessions a test creates at once).
import_image() {
  local id
  id=$(docker image inspect -f '{{.Id}}' "$1")
  if [ -f "$KUBE_STATE/images/$1.id" ] && [ "$(cat "$KUBE_STATE/images/$1.id")" = "$id" ] &&
    ctr_k8s images ls -q | grep -qx "docker.io/$1"; then
    return 0
  fi
  log "importing $1 into containerd"
  docker save "$1" | ctr_k8s images import - >/dev/null
  mkdir -p "$(dirname "$KUBE_STATE/images/$1.id")"
  echo "$id" >"$KUBE_STATE/images/$1.id"
}

# gateway_image builds images/gateway from bin/glassroom (static: `make
# build` is CGO_ENABLED=0).
gateway_image() {
  local d
  d=$(mktemp -d)
  mkdir -p "$d/bin"
  cp bin/glassroom "$d/bin/glassroom"
  cp images/gateway/Dockerfile "$d/Dockerfile"
  docker build -q -f "$d/Dockerfile" -t glassroom/gateway:latest "$d" >/dev/null
  rm -rf "$d"
}

up() {
  packages
  build
  mkdir -p "$KUBE_STATE" "$RUN" "$LOGS"
  chmod 700 "$KUBE_STATE"
  pki
  kubeconfig admin "$KUBE_STATE/pki/admin.token"
  kubeconfig node "$KUBE_STATE/pki/node.token"
  kubeconfig scheduler "$KUBE_STATE/pki/scheduler.token"
  kubeconfig controller-manager "$KUBE_STATE/pki/controller-manager.token"
  command -v modprobe >/dev/null && modprobe br_netfilter 2>/dev/null || true
  sysctl -qw net.ipv4.ip_forward=1 2>/dev/null || true
  swapoff -a 2>/dev/null || true
  if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
    ip link add "$BRIDGE" type bridge
    ip addr add "$NODE_IP/24" dev "$BRIDGE"
    ip link set "$BRIDGE" up
  fi
  # Pod to pod on the bridge, as on any cluster network: Docker's FORWARD
  # policy (DROP) would otherwise drop it, and the tests must show that a
  # kernel is safe on a network that lets every pod reach every other.
  iptables -C FORWARD -i "$BRIDGE" -o "$BRIDGE" -j ACCEPT 2>/dev/null ||
    iptables -I FORWARD -i "$BRIDGE" -o "$BRIDGE" -j ACCEPT

  start etcd etcd --name glassroom --data-dir "$KUBE_STATE/etcd" \
    --listen-client-urls http://127.0.0.1:12379 --advertise-client-urls http://127.0.0.1:12379 \
    --listen-peer-urls http://127.0.0.1:12380 --initial-advertise-peer-urls http://127.0.0.1:12380 \
    --initial-cluster glassroom=http://127.0.0.1:12380 --quota-backend-bytes 2147483648
  wait_for etcd 30 curl -fsS http://127.0.0.1:12379/health

  start kube-apiserver "$BIN/kube-apiserver" \
    --etcd-servers http://127.0.0.1:12379 --bind-address 127.0.0.1 --secure-port 16443 \
    --advertise-address $NODE_IP --endpoint-reconciler-type none --service-cluster-ip-range "$SERVICE_CIDR" \
    --tls-cert-file "$KUBE_STATE/pki/apiserver.crt" --tls-private-key-file "$KUBE_STATE/pki/apiserver.key" \
    --client-ca-file "$KUBE_STATE/pki/ca.crt" --token-auth-file "$KUBE_STATE/pki/tokens.csv" \
    --service-account-key-file "$KUBE_STATE/pki/sa.pub" --service-account-signing-key-file "$KUBE_STATE/pki/sa.key" \
    --service-account-issuer https://kubernetes.default.svc \
    --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction,PodSecurity \
    --kubelet-certificate-authority "$KUBE_STATE/pki/ca.crt" --kubelet-preferred-address-types InternalIP \
    --allow-privileged=false --profiling=false --v=1
  wait_for kube-apiserver 90 api_get /readyz
  api_route

  start kube-controller-manager "$BIN/kube-controller-manager" \
    --kubeconfig "$KUBE_STATE/controller-manager.kubeconfig" --bind-address 127.0.0.1 \
    --service-account-private-key-file "$KUBE_STATE/pki/sa.key" --root-ca-file "$KUBE_STATE/pki/ca.crt" \
    --use-service-account-credentials=true --controllers '*,-nodeipam,-route,-service,-cloud-node-lifecycle' \
    --leader-elect=false --profiling=false --v=1
  start kube-scheduler "$BIN/kube-scheduler" \
    --kubeconfig "$KUBE_STATE/scheduler.kubeconfig" --bind-address 127.0.0.1 --leader-elect=false --profiling=false --v=1

  containerd_config
  start containerd containerd --config "$KUBE_STATE/containerd/config.toml"
  wait_for containerd 30 ctr --address "$RUN/containerd.sock" version

  kubelet_config
  # glassroom's seccomp profile (the Docker runtime's, in the OCI form
  # containerd reads) for kernel pods, as Localhost profile
  # glassroom-kernel.json (--k8s-seccomp-profile): containerd's
  # RuntimeDefault lets ptrace, io_uring and every socket family through.
  mkdir -p "$KUBE_STATE/kubelet/seccomp"
  make -s build >/dev/null # bin/glassroom: the profile here, the gateway image below
  bin/glassroom seccomp-profile >"$KUBE_STATE/kubelet/seccomp/glassroom-kernel.json"
  start kubelet "$BIN/kubelet" --config "$KUBE_STATE/kubelet.yaml" --kubeconfig "$KUBE_STATE/node.kubeconfig" \
    --hostname-override "$NODE" --node-ip $NODE_IP --root-dir "$KUBE_STATE/kubelet" --v=1

  pause_image
  images/python/build.sh >/dev/null
  import_image glassroom/python-kernel:latest
  gateway_image
  import_image glassroom/gateway:latest

  wait_for "the node" 120 node_ready
  wait_for "the default service account" 60 api_get /api/v1/namespaces/default/serviceaccounts/default
  log "up: KUBECONFIG=$KUBE_STATE/admin.kubeconfig"
}

down() {
  local n
  for n in kubelet kube-scheduler kube-controller-manager api-forwarder kube-apiserver containerd etcd; do
    if running "$n"; then kill -TERM "$(cat "$RUN/$n.pid")" 2>/dev/null || true; fi
  done
  for n in kubelet kube-scheduler kube-controller-manager api-forwarder kube-apiserver containerd etcd; do
    local i
    for i in $(seq 1 50); do running "$n" || break; sleep 0.2; done
    running "$n" && kill -KILL "$(cat "$RUN/$n.pid")" 2>/dev/null || true
    rm -f "$RUN/$n.pid"
  done
  # containerd-shim processes of pods outlive containerd by design.
  pkill -f "containerd-shim-runc-v2 -namespace k8s.io -address $RUN/containerd.sock" 2>/dev/null || true
}

case ${1:-up} in
  up) up ;;
  build) build ;;
  down) down ;;
  purge)
    down
    # Pod volumes, sandboxes' shm and rootfs mounts (none may be left).
    { grep -oE " ($KUBE_STATE|$RUN)/[^ ]*" /proc/mounts || true; } | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
    rm -rf "$KUBE_STATE" "$RUN"
    ip link del "$BRIDGE" 2>/dev/null || true
    iptables -D FORWARD -i "$BRIDGE" -o "$BRIDGE" -j ACCEPT 2>/dev/null || true
    iptables -t nat -D PREROUTING -i "$BRIDGE" -d "$API_SERVICE_IP" -p tcp --dport 443 -j DNAT --to-destination "$NODE_IP:16443" 2>/dev/null || true
    ;;
  *) echo "usage: $0 up|build|down|purge" >&2; exit 2 ;;
esac
