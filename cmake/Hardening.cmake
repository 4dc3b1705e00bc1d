# Sanitizer and fuzzer builds of dp (docs/hardening.md).
#
# DP_ENABLE_SANITIZERS: ASan + UBSan on every target dp builds (its
# libraries, tools, unit tests and benchmarks). Prebuilt libraries (LLVM
# Support, libonnx, protobuf, libtorch, GoogleTest, ...) stay
# uninstrumented. Any UBSan report aborts, so that it fails the test that
# triggered it.
#
# DP_BUILD_FUZZERS: the libFuzzer targets under fuzz/. Needs clang; dp's own
# code is built with coverage instrumentation and ASan + UBSan, except the
# learned placers (dpLearn, built into their plugin because the pipeline
# fuzzer links the plugin's loader): no parser reaches them, and their
# libtorch-heavy sources would take most of the fuzz build's time.

if(NOT DP_ENABLE_SANITIZERS AND NOT DP_BUILD_FUZZERS)
  return()
endif()

if(DP_BUILD_FUZZERS AND NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "DP_BUILD_FUZZERS needs clang (libFuzzer): configure "
          "with -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19")
endif()

set(DP_INSTRUMENTED_FLAGS -fsanitize=address -fsanitize=undefined
    -fno-sanitize-recover=all -fno-omit-frame-pointer)
if(DP_BUILD_FUZZERS)
  # Coverage for the fuzzer; the fuzz targets link libFuzzer's main with
  # -fsanitize=fuzzer (fuzz/CMakeLists.txt).
  list(APPEND DP_INSTRUMENTED_FLAGS -fsanitize=fuzzer-no-link)
endif()
if(DP_BUILD_FUZZERS AND NOT DP_ENABLE_SANITIZERS)
  set(DP_INSTRUMENT "$<NOT:$<STREQUAL:$<TARGET_PROPERTY:NAME>,dpLearn>>")
else()
  set(DP_INSTRUMENT 1)
endif()
foreach(flag ${DP_INSTRUMENTED_FLAGS})
  add_compile_options("$<${DP_INSTRUMENT}:${flag}>")
endforeach()
if(DP_BUILD_FUZZERS AND NOT DP_ENABLE_SANITIZERS)
  # The learned placers' plugin is built only because the pipeline fuzzer
  # links the loader, which depends on it; no fuzz target loads it, so its
  # libtorch-heavy sources are compiled as quickly as possible.
  add_compile_options("$<$<NOT:${DP_INSTRUMENT}>:-O0;-g0>")
endif()
add_link_options(-fsanitize=address -fsanitize=undefined)

if(DP_ENABLE_SANITIZERS AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  # Under -fsanitize=address at -O1, g++ 12 reports members of libstdc++'s
  # <regex> automaton (std::function moves) and of libtorch's intrusive_ptr
  # as maybe used uninitialized; they are not. The normal build keeps the
  # warning.
  add_compile_options(-Wno-maybe-uninitialized)
endif()

if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  # clang 19 flags libstdc++ 12's own use of get_temporary_buffer (in
  # std::stable_sort) as deprecated.
  add_compile_options(-Wno-deprecated-declarations)
endif()
