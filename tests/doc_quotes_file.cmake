# doc_quotes_file.cmake: the code block after "<!-- FILE -->" in DOC is FILE's
# text, unchanged, so that a document's example is the program the tests run.
#
#   cmake -DDOC=docs/cxx.md -DROOT=<source dir> -DFILE=examples/messenger_receive.cc -P doc_quotes_file.cmake
file(READ "${DOC}" doc)
file(READ "${ROOT}/${FILE}" source)
string(FIND "${doc}" "<!-- ${FILE} -->\n```cpp\n" at)
if(at EQUAL -1)
  message(FATAL_ERROR "${DOC} does not quote ${FILE} (no \"<!-- ${FILE} -->\" before a ```cpp block)")
endif()
string(LENGTH "<!-- ${FILE} -->\n```cpp\n" skip)
math(EXPR at "${at} + ${skip}")
string(SUBSTRING "${doc}" ${at} -1 rest)
string(FIND "${rest}" "```\n" end)
string(SUBSTRING "${rest}" 0 ${end} quoted)
if(NOT quoted STREQUAL source)
  message(FATAL_ERROR "${DOC}'s copy of ${FILE} differs from the file: quote it again")
endif()
message(STATUS "${DOC} quotes ${FILE} unchanged")
