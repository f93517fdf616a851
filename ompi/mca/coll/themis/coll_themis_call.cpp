// coll_themis_call.cpp: a call in flight, whatever runs it (see coll_themis_call.h).
#include "coll_themis_call.h"

#include <stdexcept>
#include <utility>

#include "coll_themis_context.h"

namespace themis {

Call::~Call() { clear(); }

void Call::reduce_with(ompi_op_t *op, ompi_datatype_t *dtype, size_t extent) {
    op_reducer_.set(op, dtype, extent);
    reducer_ = &op_reducer_;
}

void Call::reduce_nothing() { reducer_ = &no_reducer_; }

void Call::reduce_with(std::unique_ptr<Reducer> reducer) {
    own_reducer_ = std::move(reducer);
    reducer_ = own_reducer_.get();
}

void Call::then(std::function<void()> step) {
    if (!then_) {
        then_ = std::move(step);
        return;
    }
    then_ = [first = std::move(then_), step = std::move(step)] {
        first();
        step();
    };
}

void Call::below(ompi_request_t *inner, bool persistent) {
    state_ = State::Below;
    inner_ = inner;
    persistent_ = persistent;
}

void Call::finished(int rc, std::string why) {
    state_ = State::Finished;
    rc_ = rc;
    why_ = std::move(why);
}

void Call::hold(std::function<void(Call &)> launch, ompi_communicator_t *comm) {
    state_ = State::Held;
    held_ = true;
    launch_ = std::move(launch);
    retain(comm);
}

void Call::launch() {
    try {
        launch_(*this);
    } catch (const std::exception &e) {
        finished(OMPI_ERROR, e.what());
    }
    launched_.store(true, std::memory_order_release);
}

void Call::retain(ompi_communicator_t *comm) {
    if (retained_ == comm) return;
    if (retained_) throw std::logic_error("a call retains two communicators");
    OBJ_RETAIN(comm);
    retained_ = comm;
}

bool Call::progress() {
    if (held_ && !launched_.load(std::memory_order_acquire)) return false;
    switch (state_) {
    case State::Waiting:
        if (!context_->release_waiting(*this)) return false;
        [[fallthrough]]; // started on themis
    case State::Themis:
        if (!context_->drive(*this)) return false;
        results_out();
        return true;
    case State::Below: {
        if (!REQUEST_COMPLETE(inner_)) return false;
        const int rc = inner_->req_status.MPI_ERROR;
        if (persistent_) {
            int completed = 0; // complete: made inactive, as MPI_Test does
            ompi_request_test(&inner_, &completed, MPI_STATUS_IGNORE);
        } else {
            ompi_request_free(&inner_);
        }
        if (rc != OMPI_SUCCESS) throw std::runtime_error("the previous module's call failed");
        results_out();
        return true;
    }
    case State::Finished:
        if (rc_ != OMPI_SUCCESS) throw std::runtime_error(why_);
        return true;
    case State::Blank:
    case State::Held: break;
    }
    throw std::logic_error("a call progressed before it was made");
}

void Call::results_out() {
    if (copy_out.count > 0)
        ompi_datatype_copy_content_same_ddt(copy_out.dtype, copy_out.count, copy_out.to,
                                            copy_out.from);
    copy_out = CopyOut();
    if (temp.buf) temp.memory->release(temp.buf, temp.bytes);
    temp = Temporary();
    if (then_) {
        std::function<void()> steps = std::move(then_);
        then_ = nullptr;
        steps();
    }
}

void Call::clear() {
    if (context_) context_->leave(*this); // off the engine's queues first
    context_ = nullptr;
    if (temp.buf) temp.memory->release(temp.buf, temp.bytes);
    temp = Temporary();
    copy_out = CopyOut();
    work = nullptr;
    options = RunOptions();
    then_ = nullptr; // what the steps hold (device buffers, host views)
    reducer_ = nullptr;
    op_reducer_.clear();
    own_reducer_.reset();
    runs_.clear();
    traced_ = trace_written_ = false;
    state_ = State::Blank;
    inner_ = nullptr;
    persistent_ = false;
    rc_ = OMPI_SUCCESS;
    why_.clear();
    held_ = false;
    launched_.store(false, std::memory_order_relaxed);
    launch_ = nullptr;
    tracking = Tracking();
    if (ompi_communicator_t *comm = std::exchange(retained_, nullptr))
        OBJ_RELEASE(comm); // last: it may take the context with it
}

CallPool::Lease CallPool::lease() {
    std::unique_ptr<Call> call;
    {
        std::lock_guard<std::mutex> hold(lock_);
        if (!calls_.empty()) {
            call = std::move(calls_.back());
            calls_.pop_back();
        }
    }
    if (!call) call = std::make_unique<Call>();
    return Lease(*this, std::move(call));
}

void CallPool::back(std::unique_ptr<Call> call) {
    call->clear();
    std::lock_guard<std::mutex> hold(lock_);
    calls_.push_back(std::move(call));
}

} // namespace themis
