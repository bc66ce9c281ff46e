# check_includes.cmake: fails if a source file under any of DIRS (a
# ;-separated list) includes iov/internal/, the library's own floor, which
# the drivers and tools must reach only through the public headers. It also
# fails if DIRS hold no source at all, so that a moved tree cannot pass unseen.
#
#   cmake -DDIRS="src/drivers;src/tools" -P tests/layering/check_includes.cmake
set(found 0)
set(offenders "")
foreach(dir IN LISTS DIRS)
  file(GLOB_RECURSE files "${dir}/*.cc" "${dir}/*.hpp" "${dir}/*.h" "${dir}/*.cpp")
  foreach(f IN LISTS files)
    math(EXPR found "${found} + 1")
    file(STRINGS "${f}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]iov/internal/")
    foreach(line IN LISTS lines)
      string(APPEND offenders "\n  ${f}: ${line}")
    endforeach()
  endforeach()
endforeach()
if(found EQUAL 0)
  message(FATAL_ERROR "no source files under ${DIRS}")
endif()
if(offenders)
  message(FATAL_ERROR "iov/internal/ included outside the library:${offenders}")
endif()
message(STATUS "${found} files, none includes iov/internal/")
