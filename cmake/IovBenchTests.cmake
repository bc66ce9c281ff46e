# IovBenchTests.cmake: tests of what iov-bench leaves for a reader, run as a
# reader runs them (Python, /usr/bin/python3):
#
#   bench_json_chart  the JSON is Google Benchmark's (samples only with
#                     --json-samples) and compare.py reads it; each run's label
#                     agrees with the contract's names; the chart has a bar per
#                     ratio, its targets and its title, as SVG and PNG, and
#                     draws a form no one has named yet
#   bench_compare     scripts/bench-compare flags a case made slower, and only
#                     it (alone on the machine: its verdict is about timing)
#
# Included at the end of the top-level CMakeLists.txt.

if(NOT IOV_BUILD_TESTS OR NOT TARGET iov-bench)
  return()
endif()

add_test(NAME bench_json_chart
         COMMAND "${PROJECT_SOURCE_DIR}/tests/bench_json_chart_test.py" "$<TARGET_FILE:iov-bench>"
                 "${PROJECT_SOURCE_DIR}/scripts/plot-bench")
add_test(NAME bench_compare
         COMMAND "${PROJECT_SOURCE_DIR}/tests/bench_compare_test.py" "$<TARGET_FILE:iov-bench>"
                 "${PROJECT_SOURCE_DIR}/scripts/bench-compare")
set_tests_properties(bench_json_chart bench_compare PROPERTIES LABELS bench SKIP_RETURN_CODE 77)
set_tests_properties(bench_compare PROPERTIES RUN_SERIAL TRUE)
