# Sourced by the install_*.sh scripts: `apt_ready TAG PACKAGE...` sets SUDO (empty as root) and APT,
# and refreshes the package lists; without root or sudo it stops, naming the packages to install.
apt_ready() {
  local tag=$1
  shift
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
      SUDO="sudo"
    else
      echo "$tag: not root and no sudo; install them yourself (apt-get install $*)" >&2
      exit 1
    fi
  fi
  export DEBIAN_FRONTEND=noninteractive
  APT=(apt-get -o DPkg::Lock::Timeout=600)  # wait for a concurrent apt/dpkg run instead of failing on its lock
  echo "$tag: installing $* with apt-get"
  $SUDO "${APT[@]}" update -qq
}
