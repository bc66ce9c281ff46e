#!/usr/bin/python3
"""bench_compare_test: a before/after comparison flags the case that got
slower, and only it (ctest bench_compare; scripts/bench-compare, which
`IOV_BENCH_BASELINE=<commit> make bench` runs on two builds).

  tests/bench_compare_test.py build/release/bench/iov-bench scripts/bench-compare

"Before" is iov-bench; "after" is the same program with one case made twice
as slow by real work (IOV_BENCH_SLOW_CASE, bench/slow_case.hpp). Over three
cheap cases, run interleaved three times each, the comparison must print
compare.py's table and name the slowed case, slower, as the one case beyond
the noise: the two others, the same code in the same program, must not be.
"""
import json
import os
import re
import stat
import subprocess
import sys
import tempfile


def main():
    bench, compare = sys.argv[1:3]
    listed = subprocess.run([bench, "--list"], capture_output=True, text=True, check=True).stdout.split()
    preferred = ["iov_kunit_benchmark_crc32c_l2_4k", "iov_kunit_benchmark_crc32c_l2_512", "baseline_isal_crc32c_l2_flat"]
    cases = [n for n in preferred if n in listed]
    cases += [n for n in listed if "_l2_" in n and n not in cases][: 3 - len(cases)]
    if len(cases) < 3:
        print("SKIP: fewer than three cheap cases registered")
        return 77
    slowed = cases[1]
    tmp = tempfile.mkdtemp(prefix="iov-bench-compare-")
    after = os.path.join(tmp, "iov-bench-slowed")
    with open(after, "w") as f:
        f.write(f"#!/bin/sh\nIOV_BENCH_SLOW_CASE={slowed} IOV_BENCH_SLOW_PERCENT=100 exec {bench} \"$@\"\n")
    os.chmod(after, stat.S_IRWXU)
    pattern = "^(" + "|".join(re.escape(n) for n in cases) + ")$"
    r = subprocess.run([compare, "--passes=3", f"--out={tmp}/out", bench, after, f"--filter={pattern}"],
                       capture_output=True, text=True)
    print(r.stdout)
    problems = []
    if r.returncode != 0:
        problems.append(f"bench-compare: status {r.returncode}\n{r.stderr}")
    if not re.search(r"^Benchmark\s+Time\s+CPU\s+Time Old\s+Time New", r.stdout, re.M):
        problems.append("no compare.py table")
    flagged = re.findall(r"^  (slower|faster) +[-+][0-9.]+%  (\S+)", r.stdout, re.M)
    if flagged != [("slower", slowed)]:
        problems.append(f"flagged {flagged}, want only {slowed} slower")
    if f"1 of {len(cases)} cases beyond the noise" not in r.stdout:
        problems.append("the summary line does not count one case")
    for side in ("old", "new"):
        with open(f"{tmp}/out/{side}.json") as f:
            doc = json.load(f)
        for case in cases:
            n = sum(1 for b in doc["benchmarks"] if b["run_type"] == "iteration" and b["name"].split("/")[0] == case)
            if n != 48:
                problems.append(f"{side}.json holds {n} samples of {case}, want 3 passes of 16")
    subprocess.run(["rm", "-rf", tmp])
    for p in problems:
        print(f"FAIL: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
