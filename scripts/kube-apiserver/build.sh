#!/usr/bin/env bash
# Build a real kube-apiserver (v1.20.2) and unpack etcd (3.4.23) from Debian's packages, once.
#
# The integration tests run against these two binaries. Nothing can be downloaded from
# dl.k8s.io or a Go proxy on our machines, so kube-apiserver is compiled from Debian's own
# `kubernetes` source package with Debian's Go (docs/testing-with-kube-apiserver.md).
# The result is cached OUTSIDE the repository; a second run returns at once.
#
#   scripts/kube-apiserver/build.sh            # prints the directory holding both binaries
#   WLMAP_KUBE_DIR=/some/dir scripts/...       # cache somewhere else
set -euo pipefail

KUBE_DEB_VERSION="1.20.5+really1.20.2-1.1+deb12u1"
OUT="${WLMAP_KUBE_DIR:-$HOME/.cache/workload-map/kube-apiserver-v1.20.2}"
WORK="${WLMAP_KUBE_WORK:-$HOME/.cache/workload-map/kube-build}"

if [[ -x "$OUT/kube-apiserver" && -x "$OUT/etcd" ]]; then
  echo "$OUT"
  exit 0
fi

log() { echo "[kube-build] $*" >&2; }
SUDO=""
[[ $(id -u) -eq 0 ]] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive

mkdir -p "$OUT" "$WORK"
exec 9>"$WORK/.lock"
flock 9   # two test runs starting together build once
if [[ -x "$OUT/kube-apiserver" && -x "$OUT/etcd" ]]; then echo "$OUT"; exit 0; fi

log "installing build packages (golang-go, dpkg-dev, openssl, reflect2/json-iterator sources)"
need=()
for p in golang-go dpkg-dev openssl golang-github-modern-go-reflect2-dev golang-github-json-iterator-go-dev; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if ((${#need[@]})); then
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# --- source package through a private deb-src list (the system's sources stay untouched)
SRC="$WORK/src/kubernetes-1.20.5+really1.20.2"
if [[ ! -d "$SRC/cmd/kube-apiserver" ]]; then
  log "fetching Debian source package kubernetes=$KUBE_DEB_VERSION"
  A="$WORK/apt"; mkdir -p "$A/lists/partial" "$A/parts" "$A/cache/archives/partial"
  URI=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
  URI=${URI:-http://deb.debian.org/debian}
  echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $URI bookworm main" > "$A/sources.list"
  APTO=(-o "Dir::Etc::SourceList=$A/sources.list" -o "Dir::Etc::SourceParts=$A/parts"
        -o "Dir::State::Lists=$A/lists" -o "Dir::Cache=$A/cache")
  apt-get "${APTO[@]}" update -qq
  rm -rf "$WORK/src"; mkdir -p "$WORK/src"
  (cd "$WORK/src" && apt-get "${APTO[@]}" source -qq "kubernetes=$KUBE_DEB_VERSION" >/dev/null)
fi

# --- GOPATH mode: the 1.20 tree does not build in module mode with its vendor/ folder
export GOPATH="$WORK/gopath" GOCACHE="$WORK/gocache" GO111MODULE=off CGO_ENABLED=0 GOPROXY=off GOFLAGS=
mkdir -p "$GOPATH/src/k8s.io"
ln -sfn "$SRC" "$GOPATH/src/k8s.io/kubernetes"
cd "$GOPATH/src/k8s.io/kubernetes"

# Fix 1: vendored reflect2 1.0.1 segfaults under Go >= 1.18; use Debian's newer sources.
if [[ ! -f vendor/.wlmap-reflect2-fixed ]]; then
  for d in github.com/modern-go/reflect2 github.com/json-iterator/go; do
    rm -rf "vendor/$d"; mkdir -p "vendor/$d"
    cp -a "/usr/share/gocode/src/$d/." "vendor/$d/"
    find "vendor/$d" -name '*_test.go' -delete
  done
  touch vendor/.wlmap-reflect2-fixed
fi

# Fix 2: the generated OpenAPI definitions are not in the source tarball.
if [[ ! -f pkg/generated/openapi/zz_generated.openapi.go ]]; then
  log "generating OpenAPI definitions"
  go build -o "$WORK/openapi-gen" k8s.io/kubernetes/vendor/k8s.io/kube-openapi/cmd/openapi-gen
  IN=$(grep -rlR --include='*.go' '+k8s:openapi-gen=' pkg cmd plugin vendor \
       | grep -vE '^vendor/k8s.io/(code-generator|sample-apiserver)/' | grep -v '_test.go' \
       | xargs -n1 dirname | LC_ALL=C sort -u | sed 's#^#k8s.io/kubernetes/#' | paste -sd, -)
  "$WORK/openapi-gen" -i "$IN" -p k8s.io/kubernetes/pkg/generated/openapi -O zz_generated.openapi \
      -h vendor/k8s.io/code-generator/hack/boilerplate.go.txt -r "$WORK/openapi-violations.report"
fi

log "building kube-apiserver (about 3 minutes cold, 10 s with a warm Go cache)"
V=v1.20.2; P=k8s.io/kubernetes/vendor
LDF="-s -w \
 -X $P/k8s.io/component-base/version.gitVersion=$V \
 -X $P/k8s.io/component-base/version.gitMajor=1 \
 -X $P/k8s.io/component-base/version.gitMinor=20 \
 -X $P/k8s.io/component-base/version.gitTreeState=clean \
 -X $P/k8s.io/component-base/version.buildDate=2021-01-13T00:00:00Z \
 -X $P/k8s.io/client-go/pkg/version.gitVersion=$V \
 -X $P/k8s.io/client-go/pkg/version.gitMajor=1 \
 -X $P/k8s.io/client-go/pkg/version.gitMinor=20"
go build -o "$OUT/kube-apiserver.tmp" -ldflags "$LDF" k8s.io/kubernetes/cmd/kube-apiserver

log "unpacking etcd from the etcd-server package (not installed: that would start a system etcd)"
rm -rf "$WORK/etcd" && mkdir -p "$WORK/etcd"
(cd "$WORK/etcd" && apt-get download -qq etcd-server >/dev/null && dpkg-deb -x etcd-server_*.deb root)
cp "$WORK/etcd/root/usr/bin/etcd" "$OUT/etcd.tmp"

mv "$OUT/etcd.tmp" "$OUT/etcd"
mv "$OUT/kube-apiserver.tmp" "$OUT/kube-apiserver"
"$OUT/kube-apiserver" --version >&2
"$OUT/etcd" --version | sed -n 1p >&2  # sed reads it all: head would SIGPIPE etcd under pipefail
echo "$OUT"
