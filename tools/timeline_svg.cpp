// timeline_svg: the SVG timeline of one simulated collective (see timeline_svg.h).
//
//   title (two lines)
//   dim 0 label |  [c0 RS][c1 RS][c0 AG/////] ...        one lane per dimension,
//   dim 1 label |      [c0 RS][c2 RS] ...                 sub-lanes stacked when K > 1
//               +----+----+----+----+--- time (us)        grid, ideal time dashed
//   legend: RS solid, AG hatched, ideal, chunk colours
#include "timeline_svg.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <numeric>

namespace themis::sim {

namespace {

// Layout, in pixels.
constexpr double kWidth = 1200;
constexpr double kPlotLeft = 210; // lane labels to the left of it
constexpr double kPlotRight = 1170;
constexpr double kPlotTop = 78; // the title above it
constexpr double kSubLaneHeight = 28;
constexpr double kLaneGap = 12;
constexpr double kAxisHeight = 46;
constexpr double kLegendHeight = 40;
constexpr double kMinLabelWidth = 16; // narrower rectangles carry no chunk number

// Tableau 10: hues that stay apart on screen and in print; the text colour that reads on each.
struct Colour {
    const char *fill;
    const char *text;
};
const Colour kPalette[] = {{"#4e79a7", "#fff"}, {"#f28e2b", "#000"}, {"#e15759", "#fff"},
                           {"#76b7b2", "#000"}, {"#59a14f", "#fff"}, {"#edc948", "#000"},
                           {"#b07aa1", "#fff"}, {"#ff9da7", "#000"}, {"#9c755f", "#fff"},
                           {"#bab0ac", "#000"}};
constexpr int kPaletteSize = static_cast<int>(std::size(kPalette));

std::string strf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
std::string strf(const char *fmt, ...) {
    va_list ap, again;
    va_start(ap, fmt);
    va_copy(again, ap);
    std::string s(static_cast<size_t>(vsnprintf(nullptr, 0, fmt, ap)), '\0');
    va_end(ap);
    vsnprintf(s.data(), s.size() + 1, fmt, again);
    va_end(again);
    return s;
}

std::string xml_escape(const std::string &text) {
    std::string out;
    for (char c : text) {
        switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        default: out += c;
        }
    }
    return out;
}

// Where runs are drawn: one lane per dimension with more than one peer, top down; inside
// it a run takes the first sub-lane free at its start, so overlapping runs (K > 1) stack.
struct Lanes {
    std::vector<int> dims;    // drawn dimensions, top down
    std::vector<double> top;  // per dimension: y of its lane
    std::vector<int> depth;   // per dimension: number of sub-lanes
    std::vector<int> sublane; // per run (index into Ordering::runs)
    double bottom = 0;        // y of the last lane's lower edge
};

Lanes assign_lanes(const Topology &topo, const Ordering &o) {
    const int nd = topo.num_dims();
    Lanes l;
    l.top.assign(nd, 0);
    l.depth.assign(nd, 1);
    l.sublane.assign(o.runs.size(), 0);
    std::vector<size_t> by_start(o.runs.size());
    std::iota(by_start.begin(), by_start.end(), 0);
    std::stable_sort(by_start.begin(), by_start.end(),
                     [&](size_t a, size_t b) { return o.runs[a].start < o.runs[b].start; });
    std::vector<std::vector<double>> free_from(nd); // per dimension, per sub-lane
    for (size_t i : by_start) {
        const StageRun &run = o.runs[i];
        auto &lanes = free_from[run.dim];
        size_t lane = static_cast<size_t>(
            std::find_if(lanes.begin(), lanes.end(), [&](double t) { return t <= run.start; }) -
            lanes.begin());
        if (lane == lanes.size())
            lanes.push_back(run.end);
        else
            lanes[lane] = run.end;
        l.sublane[i] = static_cast<int>(lane);
    }
    double y = kPlotTop;
    for (int d = 0; d < nd; ++d) {
        if (topo.dim(d).peers < 2) continue;
        l.dims.push_back(d);
        l.depth[d] = std::max(1, static_cast<int>(free_from[d].size()));
        l.top[d] = y;
        y += l.depth[d] * kSubLaneHeight + kLaneGap;
    }
    l.bottom = y - kLaneGap;
    return l;
}

// Seconds to x, and the ticks of the time axis: a step of 1, 2 or 5 x 10^k, in the largest
// unit that keeps the tick labels whole numbers.
struct TimeAxis {
    double end; // seconds at the plot's right edge
    double step;
    double unit;
    const char *unit_name;

    explicit TimeAxis(double end_time) : end(end_time > 0 ? end_time : 1e-6) {
        const double raw = end / 8, magnitude = std::pow(10, std::floor(std::log10(raw)));
        step = 10 * magnitude;
        for (double m : {1.0, 2.0, 5.0})
            if (m * magnitude >= raw) {
                step = m * magnitude;
                break;
            }
        static const struct {
            double factor;
            const char *name;
        } units[] = {{1, "s"}, {1e-3, "ms"}, {1e-6, "us"}, {1e-9, "ns"}};
        unit = 1e-9;
        unit_name = "ns";
        for (const auto &u : units)
            if (step >= u.factor * (1 - 1e-9)) {
                unit = u.factor;
                unit_name = u.name;
                break;
            }
    }
    double x(double t) const { return kPlotLeft + (kPlotRight - kPlotLeft) * t / end; }
};

std::string header(double height) {
    return strf("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
                "viewBox=\"0 0 %.0f %.0f\" font-family=\"DejaVu Sans,Arial,sans-serif\">\n",
                kWidth, height, kWidth, height) +
           "<defs><pattern id=\"ag\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
           "patternTransform=\"rotate(45)\"><rect width=\"3\" height=\"6\" fill=\"#fff\" "
           "fill-opacity=\"0.6\"/></pattern></defs>\n"
           "<style>.r{stroke:#fff;stroke-width:.6}.h{fill:url(#ag);pointer-events:none}"
           ".n{font-size:9px;text-anchor:middle;pointer-events:none;paint-order:stroke;"
           "stroke-width:2.5px}.l{font-size:11px}"
           ".e{text-anchor:end}.g{stroke:#ccc;stroke-width:1}</style>\n" +
           strf("<rect width=\"%.0f\" height=\"%.0f\" fill=\"#fff\"/>\n", kWidth, height);
}

std::string title(const SimCase &c, const SimResult &r, const std::string &topology_label,
                  const char *timing) {
    const std::string line1 =
        strf("%s of %s in %d chunks on %s (%d ranks)", collective_name(c.collective),
             format_si(c.bytes, "B").c_str(), static_cast<int>(r.schedule.size()),
             topology_label.c_str(), c.topology.size());
    const std::string line2 =
        strf("policy %s, load model %s, K = %d: %s %s, ideal %s, utilization %.1f %%",
             policy_label(c.scheduler.policy, c.ordering.intra, c.ordering.max_active).c_str(),
             load_model_name(c.scheduler.load_model), c.ordering.max_active, timing,
             format_si(r.ordering.makespan, "s").c_str(), format_si(r.ideal, "s").c_str(),
             100 * r.utilization());
    return strf("<text x=\"20\" y=\"26\" font-size=\"16\" font-weight=\"bold\">%s</text>\n",
                xml_escape(line1).c_str()) +
           strf("<text x=\"20\" y=\"48\" font-size=\"13\">%s</text>\n", xml_escape(line2).c_str());
}

// Vertical grid lines across the lanes, tick labels and the axis name below them.
std::string time_axis(const TimeAxis &axis, const Lanes &l) {
    std::string s;
    const double y = l.bottom + 6;
    s += strf("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#444\"/>\n",
              kPlotLeft, y, kPlotRight, y);
    for (int i = 0; i * axis.step <= axis.end * (1 + 1e-9); ++i) {
        const double x = axis.x(i * axis.step);
        s += strf("<line class=\"g\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", x,
                  kPlotTop - 4, x, y + 4);
        s += strf("<text class=\"l\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n", x,
                  y + 17, i * axis.step / axis.unit);
    }
    s += strf("<text class=\"l\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">time (%s)</text>\n",
              (kPlotLeft + kPlotRight) / 2, y + 34, axis.unit_name);
    return s;
}

// A lane's background and its two-line label: what the dimension is, how busy it was.
std::string lane(const Topology &topo, const SimResult &r, const Lanes &l, int d) {
    const Dimension &dim = topo.dim(d);
    const double height = l.depth[d] * kSubLaneHeight, mid = l.top[d] + height / 2;
    const double busy = r.ordering.makespan > 0 ? r.ordering.busy[d] / r.ordering.makespan : 0;
    return strf("<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#f3f3f3\"/>\n",
                kPlotLeft, l.top[d], kPlotRight - kPlotLeft, height) +
           strf("<text class=\"l e\" x=\"%.1f\" y=\"%.1f\"><tspan font-weight=\"bold\">dim %d"
                "</tspan>: %d peers, %s</text>\n",
                kPlotLeft - 8, mid - 3, d, dim.peers, algorithm_name(dim.algorithm)) +
           strf("<text class=\"l e\" x=\"%.1f\" y=\"%.1f\">%s, busy %.1f %%</text>\n",
                kPlotLeft - 8, mid + 11, format_si(dim.bandwidth, "B/s").c_str(), 100 * busy);
}

// One stage run: the rectangle (hatched for All-Gather), its tooltip, its chunk number.
std::string run_rect(const SimResult &r, const Lanes &l, const TimeAxis &axis, size_t i) {
    const StageRun &run = r.ordering.runs[i];
    const Stage &stage = r.schedule[run.ref.chunk].stages[run.ref.stage];
    const Colour &colour = kPalette[run.ref.chunk % kPaletteSize];
    const double x = axis.x(run.start), w = std::max(axis.x(run.end) - x, 0.5);
    const double y = l.top[run.dim] + l.sublane[i] * kSubLaneHeight + 1, h = kSubLaneHeight - 2;
    std::string s =
        strf("<rect class=\"r\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\">"
             "<title>chunk %d, %s on dim %d, %s in: %s to %s</title></rect>\n",
             x, y, w, h, colour.fill, run.ref.chunk, phase_name(stage.phase), run.dim,
             format_si(stage.input_bytes, "B").c_str(), format_si(run.start, "s").c_str(),
             format_si(run.end, "s").c_str());
    if (stage.phase == Phase::AllGather)
        s += strf("<rect class=\"h\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/>\n", x,
                  y, w, h);
    // The number is haloed in the chunk's colour so that it reads over the hatching.
    if (w >= kMinLabelWidth)
        s += strf("<text class=\"n\" x=\"%.1f\" y=\"%.1f\" fill=\"%s\" stroke=\"%s\">%d</text>\n",
                  x + w / 2, y + h / 2 + 3, colour.text, colour.fill, run.ref.chunk);
    return s;
}

// The ideal time (every link busy throughout) as a dashed line across the lanes.
std::string ideal_marker(const SimResult &r, const Lanes &l, const TimeAxis &axis) {
    const double x = axis.x(r.ideal);
    return strf("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#000\" "
                "stroke-width=\"1.5\" stroke-dasharray=\"6,4\"/>\n",
                x, kPlotTop - 8, x, l.bottom + 6) +
           strf("<text class=\"l\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">ideal</text>\n", x,
                kPlotTop - 11);
}

std::string legend(double y) {
    std::string s;
    auto swatch = [&](double x, const char *fill, bool hatched, const std::string &text) {
        s += strf("<rect class=\"r\" x=\"%.1f\" y=\"%.1f\" width=\"22\" height=\"14\" "
                  "fill=\"%s\"/>\n",
                  x, y - 11, fill);
        if (hatched)
            s += strf("<rect class=\"h\" x=\"%.1f\" y=\"%.1f\" width=\"22\" height=\"14\"/>\n", x,
                      y - 11);
        s += strf("<text class=\"l\" x=\"%.1f\" y=\"%.1f\">%s</text>\n", x + 28, y, text.c_str());
    };
    swatch(kPlotLeft, kPalette[0].fill, false, "Reduce-Scatter stage");
    swatch(kPlotLeft + 160, kPalette[0].fill, true, "All-Gather stage");
    s += strf("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#000\" "
              "stroke-width=\"1.5\" stroke-dasharray=\"6,4\"/>\n",
              kPlotLeft + 300, y - 4, kPlotLeft + 322, y - 4);
    s += strf("<text class=\"l\" x=\"%.1f\" y=\"%.1f\">ideal time</text>\n", kPlotLeft + 328, y);
    const double chunks_x = kPlotLeft + 420;
    s += strf("<text class=\"l\" x=\"%.1f\" y=\"%.1f\">colour = chunk number mod %d:</text>\n",
              chunks_x, y, kPaletteSize);
    for (int k = 0; k < kPaletteSize; ++k) {
        const double x = chunks_x + 200 + 24 * k;
        s += strf("<rect class=\"r\" x=\"%.1f\" y=\"%.1f\" width=\"22\" height=\"14\" "
                  "fill=\"%s\"/>\n",
                  x, y - 11, kPalette[k].fill);
        s += strf("<text class=\"n\" x=\"%.1f\" y=\"%.1f\" fill=\"%s\">%d</text>\n", x + 11, y - 1,
                  kPalette[k].text, k);
    }
    return s;
}

} // namespace

std::string timeline_svg(const SimCase &c, const SimResult &r, const std::string &topology_label,
                         const char *timing) {
    const Lanes l = assign_lanes(r.topology, r.ordering);
    const TimeAxis axis(std::max(r.ordering.makespan, r.ideal));
    const double height = l.bottom + kAxisHeight + kLegendHeight;
    std::string svg = header(height) + title(c, r, topology_label, timing);
    for (int d : l.dims) svg += lane(r.topology, r, l, d);
    svg += time_axis(axis, l); // the grid over the lanes' background, under the runs
    for (size_t i = 0; i < r.ordering.runs.size(); ++i) svg += run_rect(r, l, axis, i);
    svg += ideal_marker(r, l, axis);
    svg += legend(l.bottom + kAxisHeight + 18);
    return svg + "</svg>\n";
}

} // namespace themis::sim
