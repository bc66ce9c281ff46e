#!/usr/bin/python3
"""bench_json_chart_test: iov-bench's JSON and chart, as a reader of them meets
them (ctest bench_json_chart; scripts/plot-bench, bench/json_report.cc).

  tests/bench_json_chart_test.py build/release/bench/iov-bench scripts/plot-bench

- The JSON is Google Benchmark's: by default each case's four aggregates and
  no sample, with --json-samples its 16 samples too; compare.py reads two of
  them as they are.
- Each run's label says what the contract's names say: a baseline_ case is a
  baseline, NAME_outofline is the out-of-line form of NAME and is measured
  against it, crc32c_bvec_split is an operation over bvec_split (not a form
  of crc32c_bvec), an inline case is measured against a case that exists;
  the KTAP summary has a row for each inline case, under the same group.
- The chart (SVG, and PNG through rsvg-convert) has one bar per ratio the
  run holds, each target drawn, the CPU, SIMD level and commit in its title;
  a case with a form no one has named yet gets its own bars and legend.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

COMPARE = "/usr/share/benchmark/compare.py"
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"FAIL: {what}")


def labels_of(doc):
    out = {}
    for b in doc["benchmarks"]:
        name = b["run_name"].split("/")[0]
        out[name] = dict(w.split("=", 1) for w in b.get("label", "").split())
    return out


def main():
    bench, plot = sys.argv[1:3]
    listed = subprocess.run([bench, "--list"], capture_output=True, text=True, check=True).stdout.split()
    # Cheap cases (no 256 MiB buffers), and one over a tiled iterator type.
    chosen = [n for n in listed if "_l2_4k" in n or "_l2_flat" in n]
    chosen += [n for n in listed if n in ("iov_kunit_benchmark_crc32c_bvec_split", "baseline_isal_crc32c_bvec_split")]
    if len(chosen) < 3:
        print("SKIP: fewer than three cheap cases registered")
        return 77
    tmp = tempfile.mkdtemp(prefix="iov-bench-json-")
    runs = {}
    # The samples of two cases are enough to see them there.
    for kind, extra, names in (("plain", [], chosen), ("samples", ["--json-samples"], chosen[:2])):
        pattern = "^(" + "|".join(re.escape(n) for n in names) + ")$"
        path = os.path.join(tmp, f"{kind}.json")
        r = subprocess.run([bench, f"--filter={pattern}", f"--json={path}"] + extra, capture_output=True, text=True)
        check(r.returncode == 0, f"iov-bench {kind}: status {r.returncode}\n{r.stderr}")
        with open(path) as f:
            runs[kind] = json.load(f)
        runs[kind + "_out"] = r.stdout

    # Google Benchmark's format, samples only when asked for.
    for kind, want, names in (("plain", 0, chosen), ("samples", 16, chosen[:2])):
        doc = runs[kind]
        for name in names:
            entries = [b for b in doc["benchmarks"] if b["run_name"].split("/")[0] == name]
            its = [b for b in entries if b["run_type"] == "iteration"]
            aggs = sorted(b["aggregate_name"] for b in entries if b["run_type"] == "aggregate")
            check(len(its) == want, f"{kind}: {name} has {len(its)} samples, want {want}")
            check(aggs == ["cv", "mean", "median", "stddev"], f"{kind}: {name} aggregates {aggs}")
            check(all("iov_median_us" in b and "label" in b for b in entries), f"{kind}: {name} lacks label/median")
    ctx = runs["plain"]["context"]
    for key in ("iov_version", "iov_commit", "iov_cpu", "iov_simd", "iov_clock", "date"):
        check(ctx.get(key), f"context has no {key}")

    # The labels, against the contract's names.
    labels = labels_of(runs["plain"])
    for name, lab in labels.items():
        base = name[: -len("_streaming")] if name.endswith("_streaming") else name
        sfx = name[len(base):]
        if name.startswith("baseline_"):
            check(lab.get("kind") == "baseline" and "vs" not in lab, f"{name}: {lab}")
        elif base.endswith("_outofline"):
            check(lab.get("form") == "outofline" and lab.get("vs") == base[: -len("_outofline")] + sfx,
                  f"{name}: {lab}")
        else:
            check(lab.get("form") == "inline", f"{name}: {lab}")
            check(lab.get("vs") in listed, f"{name}: measured against {lab.get('vs')}, which is not a case")
        if name == "iov_kunit_benchmark_crc32c_bvec_split":
            check(lab.get("iter") == "bvec_split" and lab.get("op") == "crc32c", f"{name}: {lab}")
    if "iov_kunit_benchmark_crc32c_l2_4k" in labels:  # docs/operations.md's target
        check(labels["iov_kunit_benchmark_crc32c_l2_4k"].get("target") == "<=1.03", "crc32c_l2_4k's target")

    # The KTAP summary reads the names as the labels do (one parser,
    # bench/case_names.hpp): a row per inline case under its group and memory.
    rows = {tuple(line[2:].split()[:2]) for line in runs["plain_out"].splitlines() if line.startswith("# ")}
    prefix = "iov_kunit_benchmark_"
    for name, lab in labels.items():
        if lab.get("form") != "inline" or lab.get("kind") == "memory":
            continue
        group = name[len(prefix):] if name.startswith(prefix) else name
        if lab["memory"] != "tiled":
            group = group[: -len("_" + lab["memory"])]
        check((group, lab["memory"]) in rows, f"the summary has no row {group} {lab['memory']} for {name}")

    # compare.py reads two runs as they are, with samples or without.
    if os.path.exists(COMPARE):
        r = subprocess.run(["/usr/bin/python3", COMPARE, "-a", "--no-color", "benchmarks",
                            os.path.join(tmp, "plain.json"), os.path.join(tmp, "samples.json")],
                           capture_output=True, text=True)
        check(r.returncode == 0, f"compare.py: status {r.returncode}\n{r.stderr}")
        for name in chosen[:2]:
            check(f"{name}/iterations:1/repeats:16/real_time_median" in r.stdout, f"compare.py shows no {name}")
    else:
        check(False, f"{COMPARE} is missing (libbenchmark-tools)")

    # The chart iov-bench drew beside the JSON: a bar per ratio, the targets,
    # the title.
    svg_path = os.path.join(tmp, "plain.svg")
    check(f"# chart: {svg_path}" in runs["plain_out"], "iov-bench did not draw its chart")
    svg = ET.parse(svg_path).getroot()
    ns = "{http://www.w3.org/2000/svg}"
    texts = [(t.get("class", ""), "".join(t.itertext())) for t in svg.iter(ns + "text")]
    ratios = [n for n, lab in labels.items() if lab.get("vs") in labels]
    values = [t for c, t in texts if c.startswith("value")]
    check(len(values) == len(ratios), f"{len(values)} bars for {len(ratios)} ratios")
    targets = [n for n in ratios if "target" in labels[n]]
    ticks = [e for e in svg.iter(ns + "line") if e.get("class") == "target"]
    panels = [t for c, t in texts if c == "panel"]
    check(len(ticks) == len(targets) + len(panels), f"{len(ticks)} target lines for {len(targets)} targets")
    title = " ".join(t for c, t in texts if c in ("title", "sub"))
    for part in (ctx["iov_commit"], ctx["iov_simd"], ctx["iov_cpu"]):
        check(part in title, f"the title lacks {part!r}: {title}")

    # PNG, 1400 pixels wide.
    png = os.path.join(tmp, "chart.png")
    r = subprocess.run([plot, os.path.join(tmp, "plain.json"), png], capture_output=True, text=True)
    check(r.returncode == 0, f"plot-bench PNG: {r.stderr}")
    with open(png, "rb") as f:
        head = f.read(24)
    check(head[:8] == b"\x89PNG\r\n\x1a\n" and int.from_bytes(head[16:20], "big") == 1400, "not a 1400 px PNG")

    # A form and an operation nobody has named yet appear without a change.
    doc = runs["plain"]
    fake = []
    for name, form, vs in (("iov_kunit_benchmark_widget_bvec", "inline", "baseline_widget_bvec"),
                           ("iov_kunit_benchmark_widget_bvec_pointer", "pointer", "iov_kunit_benchmark_widget_bvec"),
                           ("baseline_widget_bvec", "baseline", "")):
        kind = "baseline" if form == "baseline" else "operation"
        label = f"kind={kind} op=widget iter=bvec form={form} memory=tiled" + (f" vs={vs} ratio=time" if vs else "")
        fake.append({"name": f"{name}_median", "run_name": name, "run_type": "aggregate", "aggregate_name": "median",
                     "real_time": 1.0, "cpu_time": 1.0, "time_unit": "us", "label": label,
                     "iov_median_us": {"inline": 100.0, "pointer": 125.0, "baseline": 80.0}[form]})
    doc["benchmarks"] += fake
    path = os.path.join(tmp, "fake.json")
    with open(path, "w") as f:
        json.dump(doc, f)
    r = subprocess.run([plot, path, os.path.join(tmp, "fake.svg")], capture_output=True, text=True)
    check(r.returncode == 0, f"plot-bench on new names: {r.stderr}")
    fake_svg = open(os.path.join(tmp, "fake.svg")).read()
    for expect in ("pointer/inline", "inline/baseline", ">1.25<", "widget"):
        check(expect in fake_svg, f"the chart of a new form lacks {expect!r}")

    subprocess.run(["rm", "-rf", tmp])
    print(f"{len(chosen)} cases, {len(ratios)} ratios charted, {len(targets)} targets" if not failures else
          f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
