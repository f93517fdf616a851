// topo_file: parse the user's topology file (format in topo_file.h).
#include "topo_file.h"

#include <algorithm>
#include <climits>
#include <fstream>
#include <sstream>

#include "join_numbers.h"
#include "topology.h"

namespace themis {

namespace {

// The words of a line, without its comment.
std::vector<std::string> words_of(const std::string &line) {
    std::istringstream in(line.substr(0, line.find('#')));
    std::vector<std::string> words;
    for (std::string w; in >> w;) words.push_back(w);
    return words;
}

// A non-negative decimal integer that fits an int; -1 when `text` is none.
int parse_index(const std::string &text) {
    const bool digits = text.find_first_not_of("0123456789") == std::string::npos;
    if (text.empty() || text.size() > 9 || !digits) return -1;
    return std::stoi(text);
}

// Reads the file statement by statement, remembering the line of each cell's host so
// that a duplicate can name its first occurrence.
class TopoFileParser {
  public:
    explicit TopoFileParser(const std::string &name) : name_(name) {}

    void parse_line(const std::string &text) {
        ++line_;
        const std::string control = control_byte_in(text);
        if (!control.empty()) fail("text", control);
        const auto words = words_of(text);
        if (words.empty()) return;
        if (words[0] == "dims")
            parse_dims(words);
        else if (words[0] == "host")
            parse_host(words);
        else
            fail("keyword '" + words[0] + "'", "expected 'dims' or 'host'");
    }

    HostGrid finish() {
        line_ = std::max(line_, 1); // an empty file still gets a line to point at
        if (!dims_line_) fail("dims", "expected a line 'dims SIZExSIZE...', got none");
        if (grid_.coords.empty()) fail("host", "expected at least one host line, got none");
        return std::move(grid_);
    }

  private:
    [[noreturn]] void fail(const std::string &field, const std::string &what) const {
        throw SpecError(name_ + ":" + std::to_string(line_) + ": " + field + ": " + what);
    }

    void parse_dims(const std::vector<std::string> &words) {
        if (dims_line_)
            fail("dims", "given twice (first on line " + std::to_string(dims_line_) + ")");
        if (words.size() < 2) fail("dims", "expected sizes such as 2x4, got nothing");
        if (words.size() > 2)
            fail("dims", "expected the end of the line after the sizes, got '" + words[2] + "'");
        long long cells = 1;
        size_t start = 0;
        for (size_t i = 0; i <= words[1].size(); ++i) {
            if (i < words[1].size() && words[1][i] != 'x') continue;
            const std::string size = words[1].substr(start, i - start);
            const int n = parse_index(size);
            if (n < 1)
                fail("dims", "size " + std::to_string(grid_.sizes.size()) + " of '" + words[1] +
                                 "': expected a positive integer, got '" + size + "'");
            cells *= n;
            if (cells > INT_MAX)
                fail("dims", "'" + words[1] + "' has more cells than an int holds");
            grid_.sizes.push_back(n);
            start = i + 1;
        }
        dims_line_ = line_;
    }

    void parse_host(const std::vector<std::string> &words) {
        if (words.size() < 2) fail("host", "expected a name and its coordinates, got nothing");
        if (!dims_line_) fail("host", "expected the 'dims' line before the first host");
        const std::string &name = words[1];
        const std::string field = "host " + name;
        const size_t given = words.size() - 2;
        if (given != grid_.sizes.size())
            fail(field, "expected " + std::to_string(grid_.sizes.size()) + " coordinates (dims " +
                            join_numbers(grid_.sizes, "x") + "), got " + std::to_string(given));
        std::vector<int> coords;
        for (size_t d = 0; d < given; ++d)
            coords.push_back(parse_coordinate(name, d, words[2 + d]));
        auto first = grid_.coords.find(name);
        if (first != grid_.coords.end())
            fail(field, "given twice (first on line " +
                            std::to_string(host_at_.at(first->second).second) + ")");
        auto taken = host_at_.find(coords);
        if (taken != host_at_.end())
            fail(field, "cell (" + join_numbers(coords, " ") + ") already holds host " +
                            taken->second.first + " (line " + std::to_string(taken->second.second) +
                            "): expected one host per cell");
        host_at_[coords] = {name, line_};
        grid_.coords[name] = coords;
    }

    int parse_coordinate(const std::string &host, size_t d, const std::string &text) const {
        const std::string field = "coordinate " + std::to_string(d) + " of host " + host;
        const int c = parse_index(text);
        if (c < 0) fail(field, "expected a non-negative integer, got '" + text + "'");
        if (c >= grid_.sizes[d])
            fail(field, "expected 0.." + std::to_string(grid_.sizes[d] - 1) + " (dims " +
                            join_numbers(grid_.sizes, "x") + "), got " + text);
        return c;
    }

    const std::string &name_;
    int line_ = 0;
    int dims_line_ = 0; // 0: no dims line yet
    HostGrid grid_;
    std::map<std::vector<int>, std::pair<std::string, int>> host_at_; // cell -> host, line
};

} // namespace

HostGrid parse_topo_file(std::istream &in, const std::string &name) {
    TopoFileParser parser(name);
    for (std::string line; std::getline(in, line);) parser.parse_line(line);
    return parser.finish();
}

HostGrid read_topo_file(const std::string &path) {
    std::ifstream in(path);
    if (!in) throw SpecError(path + ": cannot open the topology file for reading");
    return parse_topo_file(in, path);
}

} // namespace themis
