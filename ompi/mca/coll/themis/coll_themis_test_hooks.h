// coll_themis_test_hooks.h: what tests make themis do that this machine would not (a rank
// whose transport fails, a calibration that measures nothing, ...). Each is an environment
// variable the test sets on the ranks it picks; this is the one place that reads them, once
// per process. Never set them in production.
//
// It is also the one place that reads the environment at all (test_hooks_in_one_file):
// the batch system's variables themis uses (slurm_env) and the user's directories
// (user_dirs) are read here, once per process.
#pragma once

#include <string>

namespace themis {

struct TestHooks {
    bool fail_connect = false;      // THEMIS_TEST_FAIL_CONNECT: this rank's connection fails
    bool fail_nonblocking = false;  // THEMIS_TEST_FAIL_NONBLOCKING: every nonblocking call
                                    // themis runs fails in the progress loop
    bool calibration_fails = false; // THEMIS_TEST_CALIBRATION_FAILS: this rank measures
                                    // no usable rate
    bool probe_fails = false;       // THEMIS_TEST_PROBE_FAILS: this rank's grid probes fail
    bool cuda_direct = false;       // THEMIS_TEST_CUDA_DIRECT=1: the transport stands for one
                                    // that moves device memory (asked at set-up, honoured with
                                    // the emulated CUDA driver only: cuda/buffers.h)
    double slow_themis_ms = 0;      // THEMIS_TEST_SLOW_THEMIS_MS=N, THEMIS_TEST_SLOW_BELOW_MS=N:
    double slow_below_ms = 0;       // every call the crossover's trial times counts N ms
                                    // longer on themis, on the module below (no call waits)
    int busy_scale_dim = -1;        // THEMIS_TEST_BUSY_SCALE=D:F: the rate refiner sees
    double busy_scale = 1;          // dimension D's measured busy time F times longer (read
                                    // when the refinement starts: coll_themis_refine.h)
};

const TestHooks &test_hooks();

// SLURM_TOPOLOGY_ADDR and SLURM_TOPOLOGY_ADDR_PATTERN (src/slurm_topology.h), as this
// process's environment holds them: `set` when either is there.
struct SlurmEnv {
    bool set = false;
    std::string addr, pattern;
};

const SlurmEnv &slurm_env();

// XDG_CACHE_HOME and HOME, where the calibration file goes by default
// (coll_themis_calibration_file auto); "" where unset.
struct UserDirs {
    std::string xdg_cache_home, home;
};

const UserDirs &user_dirs();

} // namespace themis
