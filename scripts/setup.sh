#!/usr/bin/env bash
# Installs what the tests, the local runtime and the chaos suite need beyond npm, on a fresh
# Debian/Ubuntu machine of the project's kind; later runs find everything cached and take seconds.
#
#   scripts/setup.sh            # everything
#   SETUP_SKIP_APT=1 scripts/setup.sh   # no apt-get (you installed the JDK, Maven and kcat yourself)
#
# - Debian packages, only the missing ones: a JDK 17 (DynamoDB Local, Kafka and their launchers),
#   Maven (fetches Apache Kafka from Maven Central), kcat (the librdkafka mock, the default Kafka of
#   `npm run local` / `npm run emulators`), python3-venv (cfn-lint's virtual environment).
# - Apache Kafka (lib/local/kafka/pom.xml): into ~/.m2, its classpath cached in ~/.cache/reliable-consumers.
# - cfn-lint and moto's server (requirements-test.txt, pinned) in the project's own virtual
#   environment .venv/ (gitignored), not the system's.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v javac >/dev/null || missing+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null || missing+=(maven)
command -v kcat >/dev/null || missing+=(kcat)
python3 -c 'import ensurepip, venv' 2>/dev/null || missing+=(python3-venv)
if ((${#missing[@]})); then
  if [[ -n "${SETUP_SKIP_APT:-}" ]]; then
    echo "setup: missing ${missing[*]}; install them (apt-get install -y ${missing[*]})" >&2
    exit 1
  fi
  echo "setup: installing ${missing[*]}"
  sudo=""
  [[ $(id -u) -ne 0 ]] && sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
fi

# The project's npm packages (tsx runs the Kafka install below); `npm ci` when there are none yet.
[[ -d node_modules ]] || npm ci --no-audit --no-fund

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
