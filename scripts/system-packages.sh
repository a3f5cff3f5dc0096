#!/usr/bin/env bash
# Installs the Debian packages the tests need and this machine lacks (run by `npm test` and
# .ci/run): chromium for the browser tests, nats-server for the cluster tests, systemd for the systemd-analyze that checks
# deploy/cds.service, openssl for the private CA whose certificates the cluster tests' nodes present. As root it installs them; otherwise it stops with the exact command to run.
set -euo pipefail

# package, then the program the tests run from it
REQUIRED=(
  "chromium /usr/bin/chromium"
  "systemd /usr/bin/systemd-analyze"
  "nats-server /usr/sbin/nats-server"
  "openssl /usr/bin/openssl"
)

missing=()
for entry in "${REQUIRED[@]}"; do
  read -r package program <<<"$entry"
  [[ -x "$program" ]] || missing+=("$package")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

command="apt-get update && apt-get install -y ${missing[*]}"
if [[ $(id -u) -ne 0 ]]; then
  echo "the tests need the Debian packages: ${missing[*]}. Install them as root with:" >&2
  echo "  sudo sh -c '$command'" >&2
  exit 1
fi
echo "installing the Debian packages the tests need: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q "${missing[@]}"
for entry in "${REQUIRED[@]}"; do
  read -r package program <<<"$entry"
  [[ -x "$program" ]] || { echo "$package installed, but $program is still missing" >&2; exit 1; }
done
