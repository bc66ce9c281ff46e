# gtest_file_tests.cmake: run after a test program is built (cmake -P), it
# writes the ctest file that registers the program's cases as one ctest test
# per source file, named after the file (nbd_matrix_test): the program run
# once with a --gtest_filter of that file's cases, writing its results to
# RESULTS_DIR/<name>.xml (GoogleTest's XML: one <testcase> a case, its time,
# its failures). Which file holds which case is GoogleTest's own answer
# (--gtest_list_tests with --gtest_output=json gives each case's file), so a
# case can be neither lost nor run twice.
#
# One process a file, not a case: most cases take milliseconds, and a
# process's start and exit took more (0.1 s under ASan on a slow machine,
# and the NBD fixtures' servers and credentials are made once a process),
# half the sanitized run's CPU when each case had its own.
#
# Inputs (-D): PROGRAM, OUT (the ctest file), WORKING_DIRECTORY, LABELS,
# TIMEOUT, RESULTS_DIR, DISCOVERY_TIMEOUT.
cmake_minimum_required(VERSION 3.25)

set(json "${OUT}.list.json")
file(REMOVE "${json}")
execute_process(
  COMMAND "${PROGRAM}" --gtest_list_tests "--gtest_output=json:${json}"
  WORKING_DIRECTORY "${WORKING_DIRECTORY}"
  TIMEOUT ${DISCOVERY_TIMEOUT}
  RESULT_VARIABLE status
  OUTPUT_VARIABLE output
  ERROR_VARIABLE output)
if(NOT status EQUAL 0 OR NOT EXISTS "${json}")
  file(REMOVE "${OUT}")
  message(FATAL_ERROR "${PROGRAM} --gtest_list_tests failed (${status}):\n${output}")
endif()
file(READ "${json}" list)
file(REMOVE "${json}")

# name.* where every case of a suite is in one file, else the cases by name:
# the filter of each file, in the order GoogleTest runs them.
set(files "")
string(JSON suites LENGTH "${list}" testsuites)
math(EXPR last_suite "${suites} - 1")
foreach(s RANGE ${last_suite})
  string(JSON suite GET "${list}" testsuites ${s} name)
  string(JSON suite_cases GET "${list}" testsuites ${s} testsuite)
  string(JSON cases LENGTH "${suite_cases}")
  math(EXPR last_case "${cases} - 1")
  set(suite_files "")
  foreach(c RANGE ${last_case})
    string(JSON file GET "${suite_cases}" ${c} file)
    string(JSON case GET "${suite_cases}" ${c} name)
    get_filename_component(file "${file}" NAME_WE)
    if(NOT file IN_LIST files)
      list(APPEND files "${file}")
      set(filter_${file} "")
    endif()
    if(NOT file IN_LIST suite_files)
      list(APPEND suite_files "${file}")
      set(cases_${file} "")
    endif()
    list(APPEND cases_${file} "${suite}.${case}")
  endforeach()
  list(LENGTH suite_files n)
  foreach(file IN LISTS suite_files)
    if(n EQUAL 1)
      list(APPEND filter_${file} "${suite}.*")
    else()
      list(APPEND filter_${file} ${cases_${file}})
    endif()
  endforeach()
endforeach()

set(script "")
foreach(file IN LISTS files)
  string(REPLACE ";" ":" filter "${filter_${file}}")
  string(APPEND script
    "add_test([==[${file}]==] [==[${PROGRAM}]==] [==[--gtest_filter=${filter}]==] "
    "[==[--gtest_output=xml:${RESULTS_DIR}/${file}.xml]==])\n"
    "set_tests_properties([==[${file}]==] PROPERTIES WORKING_DIRECTORY [==[${WORKING_DIRECTORY}]==] "
    "LABELS [==[${LABELS}]==] TIMEOUT ${TIMEOUT})\n")
endforeach()
file(WRITE "${OUT}" "${script}")
