#!/usr/bin/env bash
# The unit tests' summary line: how many tests did not run here and why (crates/testkit
# records each in the file given). Under CI=true a skip (not root, a tool missing) already
# failed its test; "not applicable here" (a fact of the machine no install step changes,
# such as a kernel without modules) does not.
set -euo pipefail
file=${1:?usage: test-summary.sh SKIPS-FILE}
if [ ! -s "$file" ]; then
    echo "unit: every test ran (none skipped)"
    exit 0
fi
skipped=$(grep -vc '(not applicable here)' "$file" || true)
na=$(grep -c '(not applicable here)' "$file" || true)
echo "unit: $skipped test(s) skipped (a skip fails under CI=true), $na not applicable on this machine:"
sed 's/^/  /' "$file"
