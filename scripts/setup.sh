#!/usr/bin/env bash
# The README's first command and .ci/run run this. It installs what `npm run local` and `npm test`
# need beyond Node and npm on a fresh Debian/Ubuntu machine of the project's kind; later runs find
# everything cached and take seconds.
#
#   bash scripts/setup.sh                 # everything
#   SETUP_SKIP_APT=1 bash scripts/setup.sh  # no apt-get (you installed the JDK, Maven and kcat)
#
# - Debian packages, only the missing ones: a JDK 17 (DynamoDB Local, Kafka and their launchers),
#   Maven (fetches Apache Kafka from Maven Central), kcat (the librdkafka mock, the default Kafka of
#   `npm run local` / `npm run emulators`), python3-venv (the Python tools' virtual environment).
#   As root through apt-get; otherwise through sudo when there is one; else it prints the command.
# - npm packages from the lockfile, when node_modules is missing or older than package-lock.json.
# - cfn-lint and moto's server (requirements-test.txt, pinned) in the project's own virtual
#   environment .venv/ (gitignored), not the system's.
# - Apache Kafka (lib/local/kafka/pom.xml): into ~/.m2, its classpath cached in ~/.cache/reliable-consumers.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
{ command -v java && command -v javac; } >/dev/null 2>&1 || missing+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null || missing+=(maven)
command -v kcat >/dev/null || missing+=(kcat)
python3 -c 'import ensurepip, venv' 2>/dev/null || missing+=(python3-venv)
if ((${#missing[@]})); then
  sudo=""
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null 2>&1 && sudo=sudo
  fi
  if [[ -n "${SETUP_SKIP_APT:-}" ]] || ! command -v apt-get >/dev/null 2>&1 || [[ $(id -u) -ne 0 && -z $sudo ]]; then
    echo "setup: missing ${missing[*]}. Install them, then run this again:" >&2
    if command -v apt-get >/dev/null 2>&1; then
      echo "  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
    else
      echo "  a JDK 17+ (java and javac), Maven, kcat and Python 3 with venv from your package manager" >&2
      echo "  (macOS: brew install openjdk@17 maven kcat python)" >&2
    fi
    exit 1
  fi
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [[ ! -f node_modules/.package-lock.json || package-lock.json -nt node_modules/.package-lock.json ]]; then
  npm ci --no-audit --no-fund
fi

started=$SECONDS
# requirements-test.txt pins them (cfn-lint, moto's server); pip is rerun only when it changed.
if [[ ! -x .venv/bin/python || ! .venv/.requirements-installed -nt requirements-test.txt ]]; then
  echo "setup: Python tools (requirements-test.txt) into .venv/"
  python3 -m venv .venv
  .venv/bin/pip install -q --disable-pip-version-check -r requirements-test.txt
  touch .venv/.requirements-installed
fi
echo "setup: Python tools in .venv/ ($((SECONDS - started)) s)"

started=$SECONDS
# Through the launcher itself, so the cache it reads is the one filled here.
npx --no-install tsx scripts/installKafka.ts
echo "setup: Kafka ready ($((SECONDS - started)) s)"
