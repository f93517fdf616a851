// coll_themis_test_hooks.h: what tests make themis do that this machine would not (a rank
// whose transport fails, a calibration that measures nothing, ...). Each is an environment
// variable the test sets on the ranks it picks; this is the one place that reads them, once
// per process. Never set them in production.
#pragma once

namespace themis {

struct TestHooks {
    bool fail_connect = false;      // THEMIS_TEST_FAIL_CONNECT: this rank's connection fails
    bool fail_nonblocking = false;  // THEMIS_TEST_FAIL_NONBLOCKING: every nonblocking call
                                    // themis runs fails in the progress loop
    bool calibration_fails = false; // THEMIS_TEST_CALIBRATION_FAILS: this rank measures
                                    // no usable rate
    bool cuda_direct = false;       // THEMIS_TEST_CUDA_DIRECT=1: the transport stands for one
                                    // that moves device memory (honoured with the emulated
                                    // CUDA driver only: coll_themis_cuda.cpp)
};

const TestHooks &test_hooks();

} // namespace themis
