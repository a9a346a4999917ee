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
#   `npm run local` / `npm run emulators`), python3-venv (the Python tools' virtual environment),
#   chromium (the local console's browser tests drive Debian's build with playwright-core: browser
#   downloads do not work here).
#   As root through apt-get; otherwise through sudo when there is one; else it prints the command.
# - npm packages from the lockfile, when node_modules is missing or older than package-lock.json.
# - cfn-lint and moto's server (requirements-test.txt, pinned) in the project's own virtual
#   environment .venv/ (gitignored), not the system's.
# - Apache Kafka (local/src/services/kafka/pom.xml): into ~/.m2, its classpath cached in ~/.cache/reliable-consumers.
# - LocalStack's runtime (requirements-localstack.txt, pinned), the tests' second SQS substrate, in its own
#   venv .venv-localstack/ (gitignored) on Python >= 3.13: from PATH, else from pyenv's versions, else
#   `pyenv install` of the newest 3.13 (a fresh machine of the project's kind has pyenv with a 3.13).
#   SETUP_SKIP_LOCALSTACK=1 skips it (the LocalStack test project then fails, saying how to install it).
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
{ command -v java && command -v javac; } >/dev/null 2>&1 || missing+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null || missing+=(maven)
command -v kcat >/dev/null || missing+=(kcat)
python3 -c 'import ensurepip, venv' 2>/dev/null || missing+=(python3-venv)
[[ -x /usr/bin/chromium ]] || missing+=(chromium)
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
      echo "  a JDK 17+ (java and javac), Maven, kcat, Python 3 with venv and Chromium from your package manager" >&2
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

# A Python >= 3.13 for LocalStack: on PATH, else among pyenv's versions (pyenv's shims only run the
# selected versions), else pyenv installs one.
localstack_python() {
  local candidate
  for candidate in "${LOCALSTACK_BASE_PYTHON:-}" python3.14 python3.13 python3; do
    [[ -n $candidate ]] || continue
    if "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 13))' 2>/dev/null; then
      command -v "$candidate"
      return
    fi
  done
  command -v pyenv >/dev/null 2>&1 || return 1
  local root
  root=$(pyenv root)
  for candidate in $(ls -d "$root"/versions/3.1[3-9]* 2>/dev/null | sort -rV); do
    if [[ -x $candidate/bin/python3 ]] && "$candidate/bin/python3" -c 'import sys, venv; sys.exit(sys.version_info < (3, 13))' 2>/dev/null; then
      echo "$candidate/bin/python3"
      return
    fi
  done
  [[ ${1:-} != installed ]] || return 1
  echo "setup: no Python >= 3.13; pyenv installs the newest 3.13 (it downloads from python.org)" >&2
  pyenv install -s 3.13 >&2 || return 1
  localstack_python installed
}

started=$SECONDS
if [[ -n "${SETUP_SKIP_LOCALSTACK:-}" ]]; then
  echo "setup: LocalStack skipped (SETUP_SKIP_LOCALSTACK)"
elif [[ ! -x .venv-localstack/bin/python || ! .venv-localstack/.requirements-installed -nt requirements-localstack.txt ]]; then
  if ! base=$(localstack_python); then
    echo "setup: LocalStack needs Python >= 3.13 (localstack-core imports warnings.deprecated). Install one" >&2
    echo "  (pyenv install 3.13, or your package manager's python3.13 with venv), or point" >&2
    echo "  LOCALSTACK_BASE_PYTHON at it, then run this again; SETUP_SKIP_LOCALSTACK=1 skips it." >&2
    exit 1
  fi
  echo "setup: LocalStack runtime (requirements-localstack.txt) into .venv-localstack/ on $("$base" --version)"
  rm -rf .venv-localstack
  "$base" -m venv .venv-localstack
  .venv-localstack/bin/pip install -q --disable-pip-version-check -r requirements-localstack.txt
  touch .venv-localstack/.requirements-installed
fi
echo "setup: LocalStack runtime in .venv-localstack/ ($((SECONDS - started)) s)"
