#!/usr/bin/env bash
# Browser tests drive Debian's chromium through Playwright (no browser download: the closed network forbids it).
# Install it when it is missing and we are allowed to; otherwise the browser tests skip and say why.
set -u
if [ -x /usr/bin/chromium ]; then exit 0; fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "Installing Debian's chromium for the browser tests..."
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
    || echo "Could not install chromium: browser tests will be skipped."
else
  echo "chromium is not installed and this user cannot install it: browser tests will be skipped."
fi
exit 0
