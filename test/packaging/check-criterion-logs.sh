#!/bin/sh
# SPDX-License-Identifier: MIT
#
# No test logs through cr_log_warn() or cr_log_error(): Criterion 2.4.1
# exits 1 after either, although every test passed, so a notice such as
# "prometheus_client is missing" failed the package build on a machine
# without the module. A notice is cr_log_info(); a test that cannot run is
# cr_skip_test().
#
# usage: check-criterion-logs.sh TEST-DIR
# Prints a TAP report.
set -u

echo "1..1"
hits=$(grep -rnE '\bcr_log_(warn|error)[[:space:]]*\(' "$1" --include='*.c' --include='*.h' \
	--include='*.cpp')
if [ -z "$hits" ]; then
	echo "ok 1 - no test calls cr_log_warn() or cr_log_error()"
	exit 0
fi
echo "not ok 1 - Criterion exits 1 after cr_log_warn()/cr_log_error(); use cr_log_info():"
printf '%s\n' "$hits" | sed 's/^/#   /'
exit 1
