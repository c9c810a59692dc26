#!/usr/bin/env bash
# System packages the tests use, from Debian's archive, installed when missing and allowed:
# - chromium: browser tests drive it through Playwright (no browser download: the closed network forbids it);
# - bubblewrap: the evaluator's sandbox confines untrusted code's file system with it where present.
# Otherwise the browser tests skip and the evaluator records that its file-system isolation was not in force.
set -u
missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
command -v bwrap >/dev/null || missing+=(bubblewrap)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "Installing ${missing[*]} for the tests..."
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null) \
    || echo "Could not install ${missing[*]}: browser tests skip; the sandbox runs without bubblewrap."
else
  echo "Missing ${missing[*]} and this user cannot install them: browser tests skip; the sandbox runs without bubblewrap."
fi
exit 0
