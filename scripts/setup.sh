#!/bin/sh
# The README's first command runs this: it installs what `npm run local` and `npm test` need and
# this machine lacks, then `npm ci` when node_modules is missing or older than the lockfile.
#   - Java 17 with javac (DynamoDB Local; javac compiles its 127.0.0.1 launcher) and kcat (the
#     Kafka mock cluster): through apt-get when run as root on Debian/Ubuntu; otherwise it prints
#     the one command to run and exits 1.
set -eu
cd "$(dirname "$0")/.."

packages=""
command -v java >/dev/null 2>&1 && command -v javac >/dev/null 2>&1 || packages="$packages openjdk-17-jdk-headless"
command -v kcat >/dev/null 2>&1 || packages="$packages kcat"

if [ -n "$packages" ]; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing$packages"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $packages
  else
    echo "setup: missing$packages. Install them, then run this again:" >&2
    if command -v apt-get >/dev/null 2>&1; then
      echo "  sudo apt-get update && sudo apt-get install -y$packages" >&2
    else
      echo "  a JDK 17+ (java and javac) and kcat, from your system's package manager (macOS: brew install openjdk@17 kcat)" >&2
    fi
    exit 1
  fi
fi

if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi
echo "setup: ready (java $(java -version 2>&1 | head -1 | cut -d'"' -f2), kcat at $(command -v kcat))"
