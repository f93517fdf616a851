// engine: runs a compiled plan over a Transport.
//
// Each dimension issues its ops strictly in plan order, up to K (max_active) at a time;
// an op starts once it is at the head of its dimension's queue, a slot is free and the
// chunk's previous stage has completed here. Because every rank of a dimension group
// issues the same ops in the same order, the groups never wait on each other in a cycle.
//
// One Engine per communicator: it numbers the ops of each dimension across calls, so the
// tags of concurrent or successive collectives never meet.
#pragma once

#include <memory>
#include <vector>

#include "plan.h"
#include "stage.h"
#include "topology.h"
#include "transport.h"

namespace themis {

struct EngineServices {
    Transport &transport;
    Reducer &reducer;
    Memory &memory;
};

class Engine;

// One collective in flight: progress() until it returns true.
class Execution {
  public:
    Execution(Engine &engine, std::shared_ptr<const Plan> plan, char *work, Reducer &reducer);
    bool progress();
    bool done() const { return remaining_ == 0; }

  private:
    struct Active {
        int op;
        std::unique_ptr<StageAlgorithm> algorithm;
    };
    void start_ready_ops(int dim);

    Engine &engine_;
    std::shared_ptr<const Plan> plan_;
    char *work_;
    Reducer &reducer_;
    std::vector<size_t> next_;               // per dimension: next position in dim_queue
    std::vector<std::vector<Active>> active_; // per dimension
    std::vector<bool> op_done_;
    std::vector<int> tag_base_; // per op
    size_t remaining_;
};

class Engine {
  public:
    Engine(const Topology &topo, Transport &transport, Memory &memory, int max_active);

    // Starts a plan over the work buffer; `reducer` applies this call's op.
    std::unique_ptr<Execution> start(std::shared_ptr<const Plan> plan, char *work,
                                     Reducer &reducer);
    // Starts and drives a plan to completion.
    void run(std::shared_ptr<const Plan> plan, char *work, Reducer &reducer);

    const Topology &topology() const { return topo_; }
    Transport &transport() { return transport_; }
    Memory &memory() { return memory_; }
    int max_active() const { return max_active_; }

  private:
    friend class Execution;
    // Tag base of the next op issued on dimension d.
    int next_tag_base(int d);

    Topology topo_;
    Transport &transport_;
    Memory &memory_;
    int max_active_;
    std::vector<uint64_t> op_counter_; // per dimension, across calls
};

} // namespace themis
