#!/usr/bin/env bash
# Installs the command-line tools some tests run, from Debian's packages,
# when they are missing. Idempotent: present tools are left alone.
#   promtool (package prometheus): checks the alert rules in docs/OPERATIONS.md.
set -u
if ! command -v promtool >/dev/null 2>&1; then
	echo "tools: installing promtool (Debian package prometheus)"
	if [ "$(id -u)" = 0 ]; then sudo=; else sudo=sudo; fi
	export DEBIAN_FRONTEND=noninteractive
	$sudo apt-get update -qq >/dev/null 2>&1 || true
	$sudo apt-get install -y -qq --no-install-recommends prometheus >/dev/null 2>&1 ||
		echo "tools: could not install prometheus; TestOperationsAlertRules will say so" >&2
	# The package may start a server; the tests need only promtool.
	(command -v systemctl >/dev/null 2>&1 && $sudo systemctl disable --now prometheus >/dev/null 2>&1) || true
	pkill -x prometheus >/dev/null 2>&1 || true
fi
exit 0
