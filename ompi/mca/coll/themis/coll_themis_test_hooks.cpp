// coll_themis_test_hooks.cpp: the test hooks' environment, the batch system's variables and
// the user's directories, read once (see the header).
#include "coll_themis_test_hooks.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace themis {

const TestHooks &test_hooks() {
    static const TestHooks hooks = [] {
        auto set = [](const char *name) { return std::getenv(name) != nullptr; };
        auto ms = [](const char *name) {
            const char *value = std::getenv(name);
            return value ? std::strtod(value, nullptr) : 0.0;
        };
        const char *direct = std::getenv("THEMIS_TEST_CUDA_DIRECT");
        TestHooks h;
        h.fail_connect = set("THEMIS_TEST_FAIL_CONNECT");
        h.fail_nonblocking = set("THEMIS_TEST_FAIL_NONBLOCKING");
        h.calibration_fails = set("THEMIS_TEST_CALIBRATION_FAILS");
        h.probe_fails = set("THEMIS_TEST_PROBE_FAILS");
        h.cuda_direct = direct != nullptr && std::strcmp(direct, "1") == 0;
        h.slow_themis_ms = ms("THEMIS_TEST_SLOW_THEMIS_MS");
        h.slow_below_ms = ms("THEMIS_TEST_SLOW_BELOW_MS");
        if (const char *scale = std::getenv("THEMIS_TEST_BUSY_SCALE"))
            if (std::sscanf(scale, "%d:%lf", &h.busy_scale_dim, &h.busy_scale) != 2)
                h.busy_scale_dim = -1;
        return h;
    }();
    return hooks;
}

const SlurmEnv &slurm_env() {
    static const SlurmEnv env = [] {
        const char *addr = std::getenv("SLURM_TOPOLOGY_ADDR");
        const char *pattern = std::getenv("SLURM_TOPOLOGY_ADDR_PATTERN");
        SlurmEnv e;
        e.set = addr != nullptr || pattern != nullptr;
        e.addr = addr ? addr : "";
        e.pattern = pattern ? pattern : "";
        return e;
    }();
    return env;
}

const UserDirs &user_dirs() {
    static const UserDirs dirs = [] {
        auto value = [](const char *name) {
            const char *v = std::getenv(name);
            return std::string(v ? v : "");
        };
        return UserDirs{value("XDG_CACHE_HOME"), value("HOME")};
    }();
    return dirs;
}

} // namespace themis
