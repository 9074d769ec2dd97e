#!/usr/bin/env bash
# Installs Debian's Chromium for the browser tests when it is missing and we may install it.
# Never fails the run: the browser tests skip with a clear reason when no Chromium is found.
if command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ]; then exit 0; fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing Debian chromium for the browser tests..."
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
    || echo "chromium could not be installed; browser tests will be skipped"
else
  echo "chromium is not installed and this user cannot install it; browser tests will be skipped"
fi
exit 0
