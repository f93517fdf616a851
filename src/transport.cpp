// transport: what a transport offers beyond contiguous messages, by default nothing.
#include "transport.h"

#include <stdexcept>

namespace themis {

size_t Transport::max_segments(int) const { return 0; }

Transport::Request Transport::isendv(int, int, const Segment *, size_t, int) {
    throw std::logic_error("isendv on a dimension whose transport takes no segment lists");
}

Transport::Request Transport::irecvv(int, int, const Segment *, size_t, int, Reducer *) {
    throw std::logic_error("irecvv on a dimension whose transport takes no segment lists");
}

} // namespace themis
