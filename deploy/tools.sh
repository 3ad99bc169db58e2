# Sourced by the deployment tests: installs what they need from the package registries when it
# is missing (a fresh CI machine has cargo, node, npm, python3 and kubectl, nothing else).
#   need_debian CMD PACKAGE   the command, from a Debian package (apt-get; needs root)
#   need_venv                 python venv with kubernetes-validate (PyPI), in target/; sets $VENV
# Versions are pinned here.

KUBERNETES_VALIDATE_VERSION=1.37.0
DEPLOY_TOOLS_DIR="${DEPLOY_TOOLS_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/target/deploy-tools}"
_apt_updated=

need_debian() {
  local cmd=$1 pkg=$2
  command -v "$cmd" >/dev/null && return 0
  if [ "$(id -u)" != 0 ]; then
    echo "$cmd is missing: install the Debian package $pkg (apt-get install $pkg, as root)" >&2
    return 1
  fi
  echo "installing the Debian package $pkg (for $cmd)" >&2
  if [ -z "$_apt_updated" ]; then
    apt-get update -qq >&2
    _apt_updated=1
  fi
  # A package may try to start its own service (prometheus, haproxy): the tests never use it,
  # they start their own processes on ports they pick, so whether that start happens or is
  # refused (no init system in a container) does not matter.
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$pkg" >&2
  command -v "$cmd" >/dev/null
}

need_venv() {
  VENV="$DEPLOY_TOOLS_DIR/venv"
  if ! "$VENV/bin/python" -c "import kubernetes_validate, yaml" 2>/dev/null \
    || [ "$("$VENV/bin/pip" show kubernetes-validate 2>/dev/null | sed -n 's/^Version: //p')" != "$KUBERNETES_VALIDATE_VERSION" ]; then
    echo "installing kubernetes-validate $KUBERNETES_VALIDATE_VERSION into $VENV" >&2
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --disable-pip-version-check "kubernetes-validate==$KUBERNETES_VALIDATE_VERSION" >&2
  fi
}
