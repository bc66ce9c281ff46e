// report.hpp: iov-fio's results, printed as fio prints them (group reporting:
// all jobs summed) or as fio's JSON (jobs[].read.iops, .bw, .clat_ns ...).
//
//   iov::fio::print_normal(opts, result, stdout);
#pragma once

#include <cstdio>

#include "fio/job.hpp"

namespace iov::fio {

void print_normal(const job_options& o, const run_result& r, FILE* out);
void print_json(const job_options& o, const run_result& r, FILE* out);

}  // namespace iov::fio
