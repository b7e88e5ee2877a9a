# shellcheck shell=bash
# Shared helpers for scripts/run, scripts/test and scripts/screenshots. Sourced, not run.
# They install what is missing (apt on Debian/Ubuntu, Homebrew on macOS) so that a newcomer
# types nothing but the README's two commands.

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null 2>&1; then sudo "$@"; else
    die "need root to run: $* (install it by hand or run as root)"; fi
}

APT_UPDATED=0
# apt_need PACKAGE...: installs the Debian packages that are not installed yet.
apt_need() {
  local missing=()
  for package in "$@"; do
    dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$APT_UPDATED" -eq 0 ]; then
    log "apt-get update"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
    APT_UPDATED=1
  fi
  log "installing ${missing[*]}"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# brew_need FORMULA...: installs the Homebrew formulae that are missing.
brew_need() {
  command -v brew >/dev/null 2>&1 || die "Homebrew is needed on macOS: https://brew.sh"
  for formula in "$@"; do
    brew list --formula "$formula" >/dev/null 2>&1 || { log "brew install $formula"; brew install "$formula"; }
  done
}

is_debian() { command -v apt-get >/dev/null 2>&1 && command -v dpkg >/dev/null 2>&1; }
is_macos() { [ "$(uname -s)" = "Darwin" ]; }

ensure_swift() {
  command -v swift >/dev/null 2>&1 || die "Swift 6.2 or newer is needed: install it from https://swift.org/install"
}

# What building Gatehouse needs beyond Swift itself (SQLite is compiled in): the reference
# Argon2 library and libsodium (the two Argon2id builds Gatehouse's own is proved against and timed
# beside) and pkg-config to find them.
ensure_build_deps() {
  ensure_swift
  if is_debian; then apt_need ca-certificates pkg-config libargon2-dev libsodium-dev; fi
  if is_macos; then brew_need pkg-config argon2 libsodium; fi
}

# A PostgreSQL server to start throwaway clusters with (benchmarks on PostgreSQL).
ensure_postgres() {
  if is_debian; then apt_need postgresql; fi
  if is_macos; then brew_need postgresql@16; export PATH="$(brew --prefix postgresql@16)/bin:$PATH"; fi
}

# What the test suite needs: a PostgreSQL server, openssl, Chromium with chromedriver (the hosted
# pages are driven in a real browser), libfaketime (a server with a skewed clock), slowhttptest
# (slow clients), nginx (the cluster test's load balancer), oathtool, zbarimg and rsvg-convert (TOTP
# codes and QR images read by other tools), Prometheus (scrapes /metrics in the metrics tests) and
# Python 3 with aiosmtpd (a real SMTP server for the mail tests), Selenium and Schemathesis, in a
# virtual environment under .build-venv.
ensure_test_deps() {
  ensure_build_deps
  if is_debian; then
    apt_need postgresql python3 python3-venv openssl chromium chromium-driver faketime slowhttptest nginx \
      oathtool zbar-tools librsvg2-bin prometheus
  elif is_macos; then
    brew_need postgresql@16 python@3 openssl libfaketime slowhttptest nginx oath-toolkit zbar librsvg prometheus
    export PATH="$(brew --prefix postgresql@16)/bin:$PATH"
  fi
  ensure_browser_deps
  export GATEHOUSE_TEST_PYTHON="$PWD/.build-venv/bin/python"
  export GATEHOUSE_TEST_BROWSER="$PWD/Server/Tests/support/browser.py"
}

# The Python packages of .build-venv, pinned (Server/Tests/support/smtp_sink.py and browser.py; the OpenAPI
# validator; Schemathesis for Server/Tests/fuzz; Server/Tests/support/webauthn_authenticator.py, the software
# passkey authenticator, uses soft-webauthn and checks with webauthn (py_webauthn), and builds
# tampered bytes with cbor2 and cryptography; pyotp computes TOTP codes beside Gatehouse's; PyJWT
# reads the access tokens' aal and amr as an independent JWT library; supabase-auth and gotrue are
# Supabase's own Python clients, run unchanged against /auth/v1; firebase-scrypt and bcrypt make
# the password hashes Firebase and Supabase export, for the import tests; stripe, Stripe's own package,
# checks with Webhook.construct_event that Server/Tests/support/stripe_standin.py signs webhooks as Stripe
# does; google-api-python-client ships the androidpublisher v3 discovery document that
# Server/Tests/support/google_play_standin.py checks every Play Developer API request against, and
# google_play_selftest.py drives the stand-in with it and google-auth, as Google's own client).
# soft-webauthn 0.1.4 needs fido2 < 2, and every fido2 1.x needs cryptography < 45, while webauthn 3.x
# needs cryptography >= 49 (2.8.0: >= 46): webauthn 2.7.1 is the newest that installs beside soft-webauthn.
VENV_PACKAGES=('aiosmtpd==1.4.6' 'selenium==4.27.1' 'openapi-spec-validator==0.9.0' 'schemathesis==4.32.5'
  'soft-webauthn==0.1.4' 'webauthn==2.7.1' 'fido2==1.2.0' 'cbor2==5.9.0' 'cryptography==44.0.3' 'pyotp==2.9.0'
  'PyJWT==2.15.1' 'supabase-auth==2.34.1' 'gotrue==2.12.4' 'firebase-scrypt==0.1.0' 'bcrypt==5.0.0'
  'opentelemetry-proto==1.45.2' 'protobuf==7.36.2' 'phonenumbers==9.0.43' 'standardwebhooks==1.1.0'
  'stripe==16.1.0' 'authlib==1.6.5' 'google-api-python-client==2.202.0')

# Creates .build-venv, or completes it, unless it already holds VENV_PACKAGES at their versions.
ensure_venv() {
  if [ -x .build-venv/bin/python ] && .build-venv/bin/python - "${VENV_PACKAGES[@]}" >/dev/null 2>&1 <<'PY'
import sys
from importlib.metadata import version
sys.exit(0 if all(version(name) == pinned for name, pinned in (spec.split("==") for spec in sys.argv[1:])) else 1)
PY
  then
    return 0
  fi
  log "setting up .build-venv with ${VENV_PACKAGES[*]}"
  python3 -m venv .build-venv
  .build-venv/bin/pip install --quiet --disable-pip-version-check "${VENV_PACKAGES[@]}"
}

# What driving the hosted pages needs (Server/Tests/support/browser.py): Chromium, the matching
# chromedriver and Selenium. Selenium never downloads a browser or driver here: browser.py uses
# the installed ones (or GATEHOUSE_CHROMIUM / GATEHOUSE_CHROMEDRIVER).
ensure_browser_deps() {
  if is_debian; then
    apt_need python3 python3-venv chromium chromium-driver
  elif is_macos; then
    command -v python3 >/dev/null 2>&1 || brew_need python@3
    if [ -z "${GATEHOUSE_CHROMIUM:-}" ] && ! command -v chromium >/dev/null 2>&1 && ! command -v google-chrome >/dev/null 2>&1 \
      && [ ! -x "/Applications/Chromium.app/Contents/MacOS/Chromium" ] \
      && [ ! -x "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome" ]; then
      die "Chromium or Chrome is needed: brew install --cask chromium (or google-chrome), or set GATEHOUSE_CHROMIUM"
    fi
    if [ -z "${GATEHOUSE_CHROMEDRIVER:-}" ] && ! command -v chromedriver >/dev/null 2>&1; then
      die "chromedriver (same major version as the browser) is needed: brew install --cask chromedriver, or set GATEHOUSE_CHROMEDRIVER"
    fi
  fi
  ensure_venv
}

# The directory holding initdb/pg_ctl.
postgres_bindir() {
  local dir
  dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  if [ -n "$dir" ]; then echo "$dir"; return; fi
  dirname "$(command -v initdb)"
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# Starts a throwaway PostgreSQL cluster on a free loopback port and exports
# GATEHOUSE_TEST_POSTGRES_URL; stop it with stop_postgres.
start_postgres() {
  local bindir port runner=()
  bindir=$(postgres_bindir)
  PG_DIR=$(mktemp -d "${TMPDIR:-/tmp}/gatehouse-pg.XXXXXX")
  port=$(free_port)
  if [ "$(id -u)" -eq 0 ]; then
    # PostgreSQL refuses to run as root: use its own system user.
    id postgres >/dev/null 2>&1 || die "the postgres system user is missing"
    chown postgres "$PG_DIR"
    runner=(runuser -u postgres --)
  fi
  PG_RUNNER=("${runner[@]}")
  PG_BINDIR="$bindir"
  "${runner[@]}" "$bindir/initdb" -D "$PG_DIR/data" -U postgres --auth=trust -E UTF8 >/dev/null
  # A test cluster: durability is traded for speed here (Gatehouse's own crash tests use SQLite
  # and its fault tests restart a real server). Benchmarks ask for the defaults (PG_DURABLE=1).
  # Its checkpoints come every 30 s and its log may reach 4 GB: housekeeping keeps the cluster's
  # log to the rate those settings give (HousekeepingPace), 72 MiB/s here instead of 1.8 at the
  # defaults, which a suite making databases in parallel can outrun, slowing every test's sweep
  # with others' log; the tests of the pace set their own rate.
  local options="-p $port -k $PG_DIR -c listen_addresses=127.0.0.1 -c max_connections=400"
  [ -n "${PG_DURABLE:-}" ] || options="$options -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c checkpoint_timeout=30s -c max_wal_size=4GB"
  "${runner[@]}" "$bindir/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w -t 60 -o "$options" start >/dev/null
  export GATEHOUSE_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
  # Tests that stop and start PostgreSQL make clusters of their own with these tools.
  export GATEHOUSE_TEST_PG_BINDIR="$bindir"
  log "PostgreSQL test server on 127.0.0.1:$port"
}

stop_postgres() {
  [ -n "${PG_DIR:-}" ] || return 0
  "${PG_RUNNER[@]}" "$PG_BINDIR/pg_ctl" -D "$PG_DIR/data" -m immediate -w stop >/dev/null 2>&1 || true
  rm -rf "$PG_DIR"
  PG_DIR=""
}
