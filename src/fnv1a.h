// fnv1a: the 64-bit FNV-1a hash, for fingerprints and keys made of several fields.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace themis {

class Fnv1a {
  public:
    void bytes(const void *data, size_t n) {
        auto *b = static_cast<const unsigned char *>(data);
        for (size_t i = 0; i < n; ++i) hash_ = (hash_ ^ b[i]) * 1099511628211ull;
    }
    // The exact bits of a plain value (numbers, enums).
    template <typename T> void value(const T &v) {
        static_assert(std::is_trivially_copyable<T>::value, "hash the bits of plain values only");
        bytes(&v, sizeof v);
    }
    uint64_t digest() const { return hash_; }
    // The hash of `text`'s bytes alone.
    template <typename Text> static uint64_t of(const Text &text) {
        Fnv1a h;
        h.bytes(text.data(), text.size());
        return h.digest();
    }

  private:
    uint64_t hash_ = 14695981039346656037ull; // FNV's 64-bit offset basis
};

} // namespace themis
