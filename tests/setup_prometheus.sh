#!/usr/bin/env bash
# Installs Debian's Prometheus (prometheus + promtool) for the Prometheus-source tests when it is
# missing and we may install it. Never fails the run: those tests skip with a clear reason without it.
if command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1; then exit 0; fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing Debian prometheus for the Prometheus-source tests..."
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null) \
    || echo "prometheus could not be installed; Prometheus-source tests will be skipped"
else
  echo "prometheus is not installed and this user cannot install it; Prometheus-source tests will be skipped"
fi
exit 0
