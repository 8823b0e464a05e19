# Sourced by scripts/test: finds a Chromium and its WebDriver for the
# browser tests, installing Debian's chromium and chromium-driver with
# apt-get when missing (as PostgreSQL is), and exports
# SUBAGENTCTX_TEST_CHROMIUM and SUBAGENTCTX_TEST_CHROMEDRIVER. Where they
# cannot be installed the browser tests skip, saying so.

chromium_find() {
  local p
  for p in chromium chromium-browser; do
    command -v "$p" && return 0
  done
  return 1
}

chromium_install() {
  if ! chromium_find >/dev/null || ! command -v chromedriver >/dev/null; then
    echo "Chromium or chromedriver not found: installing Debian's chromium and chromium-driver with apt-get" >&2
    if [ "$(id -u)" = 0 ]; then
      { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver; } >/dev/null 2>&1 || true
    else
      { sudo -n apt-get update -qq &&
        sudo -n env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver; } >/dev/null 2>&1 || true
    fi
  fi
  if command -v chromedriver >/dev/null; then
    SUBAGENTCTX_TEST_CHROMEDRIVER=$(command -v chromedriver)
    export SUBAGENTCTX_TEST_CHROMEDRIVER
  else
    echo "chromedriver could not be installed: the form test skips" >&2
  fi
  local p
  if p=$(chromium_find); then
    export SUBAGENTCTX_TEST_CHROMIUM="$p"
    echo "$("$p" --version 2>/dev/null || echo Chromium) for the browser test" >&2
  else
    echo "Chromium could not be installed: the browser test skips" >&2
  fi
}
