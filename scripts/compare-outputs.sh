#!/bin/bash
# usage: scripts/compare-outputs.sh BINARY OUTDIR   (run from the repository's root)
#
# Runs `bootprint` (BINARY) over the fixtures: report (text, JSON, SVG, HTML, Perfetto),
# advise, kernel, export, diff, rc graph/login/services, modules and readahead status,
# initramfs plan, and a few failures. Each command's stdout, stderr and exit code go to
# OUTDIR (NNN.out, NNN.err, NNN.rc; commands.txt lists them). For a refactor that must not
# change output: run it with the binary before and after, then `diff -r` the two OUTDIRs.
# The file names in the outputs name a scratch directory, the same on every run.
set -u
BIN=$(realpath "$1"); DEST=$2; OUT=${TMPDIR:-/tmp}/bootprint-compare-outputs
rm -rf "$OUT"; mkdir -p "$OUT"
n=0
run() {
  n=$((n+1)); local tag=$(printf '%03d' $n)
  echo "$tag $*" >> "$OUT/commands.txt"
  "$BIN" "$@" > "$OUT/$tag.out" 2> "$OUT/$tag.err"; echo $? > "$OUT/$tag.rc"
}
TRACES="tests/fixtures/mini-trace tests/fixtures/bootchart2-example1 tests/fixtures/bootchart2-clock-skew crates/analyze/tests/data/testbed-serial.tgz crates/analyze/tests/data/testbed-startpar.tgz crates/analyze/tests/data/testbed-sysvinit-2.tgz crates/analyze/tests/data/testbed-sysvinit.tgz tests/fixtures/desktop-trace"
i=0
for t in $TRACES; do
  i=$((i+1))
  run report "$t"
  run report "$t" --json
  run report "$t" --svg "$OUT/r$i.svg" --html "$OUT/r$i.html" --perfetto "$OUT/r$i.perfetto.json"
  run report --svg="$OUT/r$i-b.svg" "$t" --json
  run advise "$t"
  run advise "$t" --json
  run kernel "$t"
  run kernel "$t" --json --svg "$OUT/k$i.svg"
  mkdir -p "$OUT/prom$i"; run export --prometheus "$OUT/prom$i" "$t"
  run rc services "$t"
done
printf '[budget]\nkernel_s = 5\ntext_login_s = 3\n' > "$OUT/budget.toml"
run report tests/fixtures/mini-trace --config "$OUT/budget.toml"
run report tests/fixtures/mini-trace --config "$OUT/budget.toml" --json
mkdir -p "$OUT/promc"; run export --prometheus "$OUT/promc" tests/fixtures/mini-trace --config "$OUT/budget.toml"
D=crates/analyze/tests/data
run diff $D/testbed-sysvinit-2.tgz $D/testbed-sysvinit.tgz
run diff $D/testbed-sysvinit-2.tgz $D/testbed-sysvinit.tgz --json
run diff $D/testbed-sysvinit-2.tgz $D/testbed-sysvinit.tgz --svg "$OUT/d1.svg"
run diff tests/fixtures/mini-trace $D/testbed-startpar.tgz --json --svg "$OUT/d2.svg"
run diff $D/testbed-serial.tgz $D/testbed-startpar.tgz
for f in tests/fixtures/dmesg/*.log tests/fixtures/dmesg/*.dmesg; do
  b=$(basename $f)
  run kernel "$f"
  run kernel "$f" --json --svg "$OUT/k-$b.svg"
done
for r in tests/fixtures/initscripts/*/; do
  run rc graph --root "$r"
  run rc graph --root "$r" --json
  run rc graph --root "$r" --dot
  run rc graph --root "$r" --runlevel 2
  run rc graph --root="$r" --runlevel=S --json
  run rc login --root "$r"
  run rc login --root "$r" --json
done
run modules plan --root tests/fixtures/modules/root
run modules plan --root tests/fixtures/modules/root --json
run modules plan --root=tests/fixtures/modules/root --kernel 6.1.0-56-amd64 --state /nonexistent/durations
run modules status --root tests/fixtures/modules/root
run modules status --root tests/fixtures/modules/root --json
run readahead status --root tests/fixtures/modules/root
run readahead status --root tests/fixtures/modules/root --json
run readahead show --root tests/fixtures/modules/root
run initramfs plan --kernel 0.0-none
# a trace with bootprint's runner's span log: the services view in report and rc services
cp -r tests/fixtures/mini-trace "$OUT/trace-rc"
printf '# bootprint rc 1\n1000 rc_start script=a action=start runlevel=2 late=0 waited_for=\n2000 rc_end script=a action=start runlevel=2 late=0 exit=0 outcome=ok timed_out=0\n2500 rc_start script=b action=start runlevel=2 late=0 waited_for=a\n4000 rc_end script=b action=start runlevel=2 late=0 exit=0 outcome=ok timed_out=0\n4000 rc_reached runlevel=2 action=start\n' > "$OUT/trace-rc/rc.log"
run report "$OUT/trace-rc"
run report "$OUT/trace-rc" --json
run rc services "$OUT/trace-rc"
run rc services "$OUT/trace-rc/rc.log" --json
# failures (exit 1) keep their messages
run report /nonexistent/trace
run diff /nonexistent/a tests/fixtures/mini-trace
run kernel tests/fixtures/README.md
run rc services /nonexistent
run rc login --root /no/such/root
# a desktop boot (session start, desktop ready) against one without a session
run diff tests/fixtures/desktop-trace tests/fixtures/mini-trace --json --svg "$OUT/d3.svg"
rm -rf "$DEST"; mv "$OUT" "$DEST"
