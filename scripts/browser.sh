# Sourced by scripts/test: finds a Chromium for the browser test, installing
# Debian's chromium with apt-get when missing (as PostgreSQL is), and
# exports SUBAGENTCTX_TEST_CHROMIUM. Where it cannot be installed the
# browser test skips, saying so.

chromium_find() {
  local p
  for p in chromium chromium-browser; do
    command -v "$p" && return 0
  done
  return 1
}

chromium_install() {
  if ! chromium_find >/dev/null; then
    echo "Chromium not found: installing Debian's chromium with apt-get" >&2
    if [ "$(id -u)" = 0 ]; then
      { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } >/dev/null 2>&1 || true
    else
      { sudo -n apt-get update -qq && sudo -n env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } >/dev/null 2>&1 || true
    fi
  fi
  local p
  if p=$(chromium_find); then
    export SUBAGENTCTX_TEST_CHROMIUM="$p"
    echo "$("$p" --version 2>/dev/null || echo Chromium) for the browser test" >&2
  else
    echo "Chromium could not be installed: the browser test skips" >&2
  fi
}
