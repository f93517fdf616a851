// order_mix: the best mix of dimension orders by linear programming (see order_mix.h).
#include "order_mix.h"

#include <glpk.h>

#include <algorithm>
#include <memory>
#include <stdexcept>

#include "cost_model.h"

namespace themis::sim {

namespace {

// Seconds each dimension is busy per byte of the collective when every chunk takes `order`.
std::vector<double> busy_per_byte(const Topology &topo, Collective coll,
                                  const std::vector<int> &order) {
    std::vector<double> busy(topo.num_dims(), 0.0);
    for (const Stage &s : chunk_stages(topo, coll, order, 1.0))
        busy[s.dim] +=
            stage_bytes_sent(topo.dim(s.dim), s.phase, s.input_bytes) / topo.dim(s.dim).bandwidth;
    return busy;
}

std::vector<std::vector<int>> all_orders(const Topology &topo) {
    std::vector<int> dims;
    for (int d = 0; d < topo.num_dims(); ++d)
        if (topo.dim(d).peers > 1) dims.push_back(d);
    std::vector<std::vector<int>> orders;
    do orders.push_back(dims);
    while (std::next_permutation(dims.begin(), dims.end()));
    return orders;
}

using Problem = std::unique_ptr<glp_prob, void (*)(glp_prob *)>;

} // namespace

OrderMix best_order_mix(const Topology &topo, Collective coll, double bytes) {
    const std::vector<std::vector<int>> orders = all_orders(topo);
    const int n_orders = static_cast<int>(orders.size());
    const int n_dims = topo.num_dims();
    Problem lp(glp_create_prob(), glp_delete_prob);
    glp_set_obj_dir(lp.get(), GLP_MIN);
    // Rows 1..n_dims: a dimension's busy time minus T, at most 0. Row n_dims + 1: the
    // fractions sum to 1. Columns 1..n_orders: the fractions; column n_orders + 1: T.
    glp_add_rows(lp.get(), n_dims + 1);
    for (int d = 1; d <= n_dims; ++d) glp_set_row_bnds(lp.get(), d, GLP_UP, 0, 0);
    glp_set_row_bnds(lp.get(), n_dims + 1, GLP_FX, 1, 1);
    glp_add_cols(lp.get(), n_orders + 1);
    for (int o = 1; o <= n_orders; ++o) glp_set_col_bnds(lp.get(), o, GLP_LO, 0, 0);
    const int t_col = n_orders + 1;
    glp_set_col_bnds(lp.get(), t_col, GLP_LO, 0, 0);
    glp_set_obj_coef(lp.get(), t_col, 1);
    // GLPK's sparse matrix is 1-based: entry 0 of each array is unused.
    std::vector<int> rows{0}, cols{0};
    std::vector<double> values{0};
    auto entry = [&](int row, int col, double v) {
        rows.push_back(row);
        cols.push_back(col);
        values.push_back(v);
    };
    for (int o = 0; o < n_orders; ++o) {
        const std::vector<double> busy = busy_per_byte(topo, coll, orders[o]);
        for (int d = 0; d < n_dims; ++d)
            if (busy[d] > 0) entry(d + 1, o + 1, busy[d] * bytes);
        entry(n_dims + 1, o + 1, 1);
    }
    for (int d = 1; d <= n_dims; ++d) entry(d, t_col, -1);
    glp_load_matrix(lp.get(), static_cast<int>(values.size()) - 1, rows.data(), cols.data(),
                    values.data());
    glp_smcp params;
    glp_init_smcp(&params);
    params.msg_lev = GLP_MSG_OFF;
    if (glp_simplex(lp.get(), &params) != 0 || glp_get_status(lp.get()) != GLP_OPT)
        throw std::runtime_error("order mix: the linear program found no optimum");
    OrderMix mix;
    mix.time = glp_get_obj_val(lp.get());
    for (int o = 0; o < n_orders; ++o) {
        const double x = glp_get_col_prim(lp.get(), o + 1);
        if (x > 1e-9) mix.shares.push_back({orders[o], x});
    }
    std::sort(mix.shares.begin(), mix.shares.end(),
              [](const OrderShare &a, const OrderShare &b) { return a.fraction > b.fraction; });
    return mix;
}

} // namespace themis::sim
