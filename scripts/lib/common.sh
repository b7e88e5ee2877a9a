# Shared helpers for scripts/run and scripts/test. Sourced, not run.
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
# Argon2 library and pkg-config to find it.
ensure_build_deps() {
  ensure_swift
  if is_debian; then apt_need ca-certificates pkg-config libargon2-dev; fi
  if is_macos; then brew_need pkg-config argon2; fi
}

# What the test suite needs: a PostgreSQL server, Python 3 with aiosmtpd (a real SMTP server
# for the mail tests, in a virtual environment under .build-venv) and openssl.
ensure_test_deps() {
  ensure_build_deps
  if is_debian; then
    apt_need postgresql python3 python3-venv openssl
  elif is_macos; then
    brew_need postgresql@16 python@3 openssl
    export PATH="$(brew --prefix postgresql@16)/bin:$PATH"
  fi
  if [ ! -x .build-venv/bin/python ] || ! .build-venv/bin/python -c 'import aiosmtpd' >/dev/null 2>&1; then
    log "creating .build-venv with aiosmtpd"
    python3 -m venv .build-venv
    .build-venv/bin/pip install --quiet --disable-pip-version-check 'aiosmtpd==1.4.6'
  fi
  export GATEHOUSE_TEST_PYTHON="$PWD/.build-venv/bin/python"
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
  # and its fault tests restart a real server).
  "${runner[@]}" "$bindir/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w -t 60 \
    -o "-p $port -k $PG_DIR -c listen_addresses=127.0.0.1 -c max_connections=400 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
    start >/dev/null
  export GATEHOUSE_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
  log "PostgreSQL test server on 127.0.0.1:$port"
}

stop_postgres() {
  [ -n "${PG_DIR:-}" ] || return 0
  "${PG_RUNNER[@]}" "$PG_BINDIR/pg_ctl" -D "$PG_DIR/data" -m immediate -w stop >/dev/null 2>&1 || true
  rm -rf "$PG_DIR"
  PG_DIR=""
}
