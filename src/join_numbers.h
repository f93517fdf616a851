// join_numbers: integers written as text between a separator, for messages and keys
// ("2x4" for grid sizes, "0 1" or "0,1" for coordinates).
#pragma once

#include <string>
#include <vector>

namespace themis {

inline std::string join_numbers(const std::vector<int> &numbers, const char *sep) {
    std::string out;
    for (size_t i = 0; i < numbers.size(); ++i) out += (i ? sep : "") + std::to_string(numbers[i]);
    return out;
}

} // namespace themis
