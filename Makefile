# iov: the newcomer's entry points. The logic lives in scripts/.
#
#   make bench                       # the benchmark report (BENCH_ARGS=--filter=bvec)
#   make test                        # the whole suite: release, example, asan, tsan
#   make fuzz FUZZ_SECONDS=60
#   make package                     # Debian packages in build/release/packages/
#   make deps | make clean

BENCH_ARGS ?=
FUZZ_SECONDS ?= 600

.PHONY: help test bench fuzz package deps clean

help:
	@echo "make bench   the benchmark report (BENCH_ARGS passes options to iov-bench)"
	@echo "make test    the whole suite (release, installed example, asan, tsan)"
	@echo "make fuzz    the fuzz targets for FUZZ_SECONDS (default $(FUZZ_SECONDS))"
	@echo "make package the Debian packages libiov-dev and iov-tools (build/release/packages/)"
	@echo "make deps    install missing Debian packages"
	@echo "make clean   remove build/"

test:
	@scripts/run-tests

bench:
	@scripts/run-bench $(BENCH_ARGS)

fuzz:
	@if [ -x scripts/run-fuzz ]; then \
	  FUZZ_SECONDS=$(FUZZ_SECONDS) scripts/run-fuzz; \
	else \
	  echo "iov: no fuzz targets yet (scripts/run-fuzz is missing)" >&2; exit 1; \
	fi

package:
	@scripts/run-package

deps:
	@scripts/install-deps

clean:
	rm -rf build
