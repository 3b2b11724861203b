# bootprint: the two commands of a fresh machine are `make demo` and `make test`.
# Both install what they need first (scripts/install-deps.sh, idempotent).

export PATH := $(HOME)/.cargo/bin:$(PATH)
CARGO ?= cargo
TESTBED := target/release/bootprint-testbed
BOOTPRINT := target/release/bootprint
OUT ?= out

.PHONY: all deps build demo test unit fleet-test otlp-test smoke bench soak lint clean fuzz-build fuzz-short fuzz-long deb deb-check package-test package-test-uefi matrix desktop-test

all: build

deps:
	./scripts/install-deps.sh

build: deps
	$(CARGO) build --release --workspace

# Build, make the test-bed image, boot it with the recorder, show the report.
demo: build
	$(TESTBED) image
	rm -rf $(OUT)/demo-trace
	$(TESTBED) boot --record --trace-out $(OUT)/demo-trace
	$(BOOTPRINT) report $(OUT)/demo-trace --svg $(OUT)/demo.svg
	@echo "bootchart: $(abspath $(OUT)/demo.svg)"

# Unit and integration tests, a short fuzz run of every parser, the Debian package's checks,
# then one real boot in the test bed.
test: build unit fuzz-short deb-check fleet-test smoke

# Debian's whole module tree (downloaded once into the test bed's cache) for the modules
# crate's full-tree tests; a skipped test fails under CI=true (crates/testkit).
MODULES_TREE ?= testbed/cache/modules-tree
SKIPS := target/test-skips.log

unit:
	@mkdir -p target && rm -f $(SKIPS)
	./tests/fixtures/modules/make-tree.sh $(MODULES_TREE) || echo "unit: no module tree; its tests will say so"
	BOOTPRINT_MODULES_TREE=$(abspath $(MODULES_TREE)) BOOTPRINT_TEST_SKIPS=$(abspath $(SKIPS)) \
		$(CARGO) test --release --workspace
	@./scripts/test-summary.sh $(SKIPS)

# The fuzz runner (docs/fuzzing.md) is built with overflow checks: its own profile.
FUZZ := target/fuzz/bootprint-fuzz
FUZZ_SEED ?= 1

fuzz-build:
	$(CARGO) build --profile fuzz -p bootprint-fuzz

# A fixed-seed run of every target: the same inputs every time, about half a minute. Then
# every input a long run ever found (fuzz/regressions/TARGET-HASH), replayed with this
# build's overflow checks: `make unit` builds without them, so only this guards those fixes.
fuzz-short: fuzz-build
	$(FUZZ) --inputs 3000 --seed 1 --max-ms 1000 --mem-mb 2048
	@for f in fuzz/regressions/*; do \
		t=$$(basename $$f); t=$${t%-*}; \
		$(FUZZ) --target $$t --input $$f --max-ms 1000 --mem-mb 2048 >/dev/null || { echo "fuzz regression $$f fails"; exit 1; }; \
	done; echo "fuzz regressions: $$(ls fuzz/regressions | wc -l) inputs replayed, none fails"

# A million inputs per target (hours on two cores); FUZZ_SEED=N for other inputs.
fuzz-long: fuzz-build
	$(FUZZ) --inputs 1000000 --seed $(FUZZ_SEED) --max-ms 1000 --mem-mb 2048

# The Debian package (docs/packaging.md): target/debian/bootprint_<version>_<arch>.deb, with
# its .buildinfo and .changes, from the release binaries `build` made.
DEB_VERSION = $(shell dpkg-parsechangelog -SVersion)
DEB_ARCH = $(shell dpkg --print-architecture)
DEB = target/debian/bootprint_$(DEB_VERSION)_$(DEB_ARCH).deb

deb: build
	./debian/build-deb.sh

# lintian, the file list, modes and conffiles, and install, upgrade, remove and purge in a
# scratch root (root only: the maintainer scripts run chrooted). About a minute.
deb-check: deb
	./debian/check-deb.sh $(DEB)

# The package on a machine GRUB boots from its own disk: install, enable, a kernel upgrade,
# disable, purge, five boots (docs/testbed.md, `package`). Not part of `make test` (its
# 40 minutes). On Debian 12 unless PACKAGE_RELEASE=13: CI runs `make test` on 13 and this on
# 12, so both releases boot in every CI run.
PACKAGE_RELEASE ?= 12
package-test: deb
	$(TESTBED) --release $(PACKAGE_RELEASE) image
	$(TESTBED) --release $(PACKAGE_RELEASE) package --deb $(DEB) --no-cargo

# The same on a UEFI machine (OVMF; GPT, EFI system partition, grub-efi-amd64), Debian 13
# unless UEFI_RELEASE=12. Not in CI (its own GRUB disk, about 3 s more a boot).
UEFI_RELEASE ?= 13
package-test-uefi: deb
	$(TESTBED) --release $(UEFI_RELEASE) image
	$(TESTBED) --release $(UEFI_RELEASE) --firmware uefi package --deb $(DEB) --no-cargo

# The package test on every boot layout README's "Supported systems" table claims (release,
# firmware, loader, initramfs generator, root file system; docs/testbed.md, `package`), one
# after another; the layouts that failed are named at the end. About five and a half hours here; not
# in CI.
MATRIX = 12,bios,grub,initramfs-tools,ext4 12,uefi,grub,initramfs-tools,ext4 \
	12,uefi,systemd-boot,initramfs-tools,ext4 13,bios,grub,initramfs-tools,ext4 \
	13,uefi,grub,initramfs-tools,ext4 13,uefi,systemd-boot,initramfs-tools,ext4 \
	13,bios,grub,dracut,ext4 13,bios,grub,initramfs-tools,btrfs \
	13,bios,grub,initramfs-tools,xfs 13,bios,grub,initramfs-tools,lvm \
	13,bios,grub,initramfs-tools,luks 13,bios,grub,initramfs-tools,luks-lvm \
	13,uefi,systemd-boot,dracut,ext4 12,bios,grub,dracut,ext4
matrix: deb
	@failed=; for cell in $(MATRIX); do \
	  set -- $$(echo $$cell | tr , ' '); echo "== matrix: $$cell"; \
	  RELEASE=$$1 FIRMWARE=$$2 LOADER=$$3 GENERATOR=$$4 ROOT=$$5; \
	  { $(TESTBED) --release $${RELEASE} image && \
	    $(TESTBED) --release $${RELEASE} --firmware $${FIRMWARE} package --loader $${LOADER} \
	      --generator $${GENERATOR} --root $${ROOT} --deb $(DEB) --no-cargo; } \
	  || failed="$$failed $$cell"; \
	done; \
	if [ -n "$$failed" ]; then echo "matrix: failed:$$failed"; exit 1; fi; \
	echo "matrix: every layout passed"

# The desktop images' Xfce session, by autologin and by the greeter (docs/testbed.md,
# `desktop`). Not part of `make test`.
desktop-test: build
	$(TESTBED) desktop --no-cargo
	$(TESTBED) desktop --systemd --no-cargo

# A planted fleet's boots in a real Prometheus (no VM; docs/testbed.md, `fleet`); the goal's
# size is FLEET_MACHINES=1000 FLEET_LIVE=200.
FLEET_MACHINES ?= 200
FLEET_LIVE ?= 50
FLEET_DAYS ?= 30
fleet-test: build
	$(TESTBED) fleet --no-cargo --machines $(FLEET_MACHINES) --live $(FLEET_LIVE) --days $(FLEET_DAYS)

# Boots' OpenTelemetry traces in a real Jaeger (no VM; docs/testbed.md, `otlp`). Not part of
# `make test`: Jaeger's first build from Go's module proxy takes about ten minutes of the
# two cores (testbed/results/README.md), which CI's time cannot spare.
otlp-test: build
	./scripts/build-jaeger.sh
	$(TESTBED) otlp --no-cargo

# A lever made to cost switches itself off, for real (docs/testbed.md, `self-off`): eleven
# boots, about twenty minutes; not part of `make test`, whose time CI cannot spare.
selfoff-test: build
	$(TESTBED) --release $(RELEASE) image
	$(TESTBED) --release $(RELEASE) self-off --no-cargo

# The test bed's real boots, on Debian 13 (the current stable) unless RELEASE=12. A guest
# kernel that dies before it runs any program (13's 6.12 under TCG, about once in 130 boots,
# testbed/results/README.md 2026-11-29) is booted once more, and the boot says so.
RELEASE ?= 13
smoke:
	$(TESTBED) --release $(RELEASE) image
	$(TESTBED) --release $(RELEASE) smoke
	$(TESTBED) --release $(RELEASE) initramfs
	$(TESTBED) --release $(RELEASE) late
	$(TESTBED) --release $(RELEASE) parity
	$(TESTBED) --release $(RELEASE) reboot
	$(TESTBED) --release $(RELEASE) faults

# Benchmarks are not part of `make test`: they take many boots.
bench: build
	$(TESTBED) image
	$(TESTBED) bench record --runs 3
	$(TESTBED) bench readahead --runs 3
	$(TESTBED) bench rc --runs 3
	$(TESTBED) bench rc --desktop --runs 3
	$(TESTBED) bench modules --runs 3
	$(TESTBED) bench initramfs --runs 3
	$(TESTBED) bench builtins --runs 3
	$(TESTBED) bench whole --runs 3
	$(TESTBED) faults --all
	$(CARGO) run --release -p bootprint-readahead --example cold_workload
	$(MAKE) fuzz-long

lint: deps
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

clean:
	$(CARGO) clean
	rm -rf $(OUT)

# The boot path's hang hunt (docs/testbed.md, soak): every boot-path configuration booted
# many times in a row; a boot that never reaches the real init (or the login) fails it.
# About three hours on 2 cores.
soak: build
	$(TESTBED) image
	failed=0; $(TESTBED) soak initramfs-readahead --boots 100 || failed=1; \
	for c in plain recorder readahead-learn readahead-replay rc modules initramfs initramfs-replay all; do \
		$(TESTBED) soak $$c --boots 30 --no-cargo || failed=1; done; exit $$failed

