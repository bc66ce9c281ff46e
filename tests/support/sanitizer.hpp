// sanitizer.hpp: which sanitizer this test program was built with, as a
// macro for #if: IOV_TEST_ASAN, IOV_TEST_TSAN. GCC defines __SANITIZE_*__;
// clang-14 (the asan preset's compiler) answers only __has_feature.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define IOV_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define IOV_TEST_ASAN 1
#endif
#endif

#if defined(__SANITIZE_THREAD__)
#define IOV_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define IOV_TEST_TSAN 1
#endif
#endif
