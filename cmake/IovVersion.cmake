# IovVersion.cmake: the version every program prints with --version and
# iov-bench records in its JSON: the project's VERSION and `git describe` of
# the source tree, read when CMake configures. CMake configures again when the
# checked-out commit changes, so a build never reports a commit it is not.
#
#   iov-nbd --version           # iov-nbd 0.1.0 (f6b5195)
#
# A tree without git (a release tarball, the export scripts/run-bench makes of
# an older commit) names its commit with -DIOV_VERSION_COMMIT=...; otherwise
# the commit reads "unknown".
#
# Defines the static library iov_version (src/tools/common/version.hpp).

set(IOV_VERSION_COMMIT "" CACHE STRING
  "The commit --version names (empty: git describe of the source tree)")

set(_iov_commit "${IOV_VERSION_COMMIT}")
if(_iov_commit STREQUAL "")
  find_package(Git QUIET)
  if(GIT_FOUND)
    execute_process(
      COMMAND "${GIT_EXECUTABLE}" describe --always --dirty --tags
      WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}"
      OUTPUT_VARIABLE _iov_commit OUTPUT_STRIP_TRAILING_WHITESPACE
      RESULT_VARIABLE _iov_git_status ERROR_QUIET)
    if(NOT _iov_git_status EQUAL 0)
      set(_iov_commit "")
    else()
      # Configure again when HEAD moves: HEAD itself (a detached checkout) and
      # the branch it names (loose, or in packed-refs).
      execute_process(
        COMMAND "${GIT_EXECUTABLE}" rev-parse --absolute-git-dir --git-common-dir --symbolic-full-name HEAD
        WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}"
        OUTPUT_VARIABLE _iov_git_paths OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
      string(REPLACE "\n" ";" _iov_git_paths "${_iov_git_paths}")
      list(LENGTH _iov_git_paths _iov_n)
      if(_iov_n EQUAL 3)
        list(GET _iov_git_paths 0 _iov_git_dir)
        list(GET _iov_git_paths 1 _iov_common_dir)
        list(GET _iov_git_paths 2 _iov_ref)
        if(NOT IS_ABSOLUTE "${_iov_common_dir}")
          set(_iov_common_dir "${PROJECT_SOURCE_DIR}/${_iov_common_dir}")
        endif()
        foreach(f "${_iov_git_dir}/HEAD" "${_iov_common_dir}/${_iov_ref}" "${_iov_common_dir}/packed-refs")
          if(EXISTS "${f}")
            set_property(DIRECTORY "${PROJECT_SOURCE_DIR}" APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${f}")
          endif()
        endforeach()
      endif()
    endif()
  endif()
endif()
if(_iov_commit STREQUAL "")
  set(_iov_commit "unknown")
endif()
set(IOV_COMMIT "${_iov_commit}")
message(STATUS "iov: version ${PROJECT_VERSION} (${IOV_COMMIT})")

configure_file("${PROJECT_SOURCE_DIR}/cmake/version.cc.in"
               "${PROJECT_BINARY_DIR}/generated/iov_version.cc" @ONLY)
add_library(iov_version STATIC "${PROJECT_BINARY_DIR}/generated/iov_version.cc")
target_include_directories(iov_version PUBLIC "${PROJECT_SOURCE_DIR}/src/tools")
