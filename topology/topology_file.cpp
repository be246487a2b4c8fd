#include "topology/topology_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sstream>

namespace hcomm::topology {
namespace {

const char* const kExpected = "expected 'host <name> switch <switch> [rack <rack>]'";

bool is_keyword(const std::string& word) {
  return word == "host" || word == "switch" || word == "rack";
}

Status bad_line(const std::string& origin, int line, const std::string& what) {
  return {HCOMM_ERR_INVALID_ARG,
          origin + ":" + std::to_string(line) + ": " + what + " (HCOMM_TOPO_FILE)"};
}

std::vector<std::string> fields_of(const std::string& line) {
  std::istringstream in(line.substr(0, line.find('#')));
  std::vector<std::string> fields;
  for (std::string f; in >> f;) fields.push_back(f);
  return fields;
}

}  // namespace

Expected<TopologyFile> TopologyFile::parse(const std::string& text, const std::string& origin) {
  TopologyFile file;
  // A switch's rack and the line that gave it: a line without `rack` inherits it, and a second
  // rack for the same switch is a contradiction worth reporting rather than guessing at.
  struct SwitchRack {
    std::string rack;
    int line = 0;
  };
  std::unordered_map<std::string, SwitchRack> switch_racks;

  std::istringstream in(text);
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    const std::vector<std::string> f = fields_of(line);
    if (f.empty()) continue;
    if (f[0] != "host")
      return bad_line(origin, line_no, "unknown keyword '" + f[0] + "'; " + kExpected);
    if (f.size() < 2 || is_keyword(f[1]))
      return bad_line(origin, line_no, "'host' needs a name; " + std::string(kExpected));

    Placement p;
    p.host = f[1];
    p.line = line_no;
    bool has_switch = false, has_rack = false;
    for (size_t i = 2; i < f.size(); i += 2) {
      const std::string& key = f[i];
      if (key != "switch" && key != "rack") {
        return bad_line(origin, line_no,
                        "unknown keyword '" + key + "' for host '" + p.host + "'; " + kExpected);
      }
      if (i + 1 >= f.size() || is_keyword(f[i + 1]))
        return bad_line(origin, line_no, "'" + key + "' needs a value; " + kExpected);
      bool& seen = key == "switch" ? has_switch : has_rack;
      if (seen)
        return bad_line(origin, line_no, "'" + key + "' given twice; " + std::string(kExpected));
      seen = true;
      (key == "switch" ? p.switch_name : p.rack) = f[i + 1];
    }
    if (!has_switch) {
      return bad_line(origin, line_no,
                      "host '" + p.host + "' has no 'switch <switch>'; " + kExpected);
    }
    if (auto it = file.index_.find(p.host); it != file.index_.end()) {
      return bad_line(origin, line_no,
                      "host '" + p.host + "' is listed twice (first on line " +
                          std::to_string(file.hosts_[it->second].line) + "); list each host once");
    }
    if (has_rack) {
      auto [it, inserted] = switch_racks.try_emplace(p.switch_name, SwitchRack{p.rack, line_no});
      if (!inserted && it->second.rack != p.rack) {
        return bad_line(origin, line_no,
                        "switch '" + p.switch_name + "' is in rack '" + p.rack +
                            "' here but in rack '" + it->second.rack + "' on line " +
                            std::to_string(it->second.line) + "; a switch belongs to one rack");
      }
    }
    file.index_.emplace(p.host, file.hosts_.size());
    file.hosts_.push_back(std::move(p));
  }
  // Lines without a rack take their switch's rack from any other line, before or after them.
  for (Placement& p : file.hosts_) {
    if (!p.rack.empty()) continue;
    if (auto it = switch_racks.find(p.switch_name); it != switch_racks.end())
      p.rack = it->second.rack;
  }
  return file;
}

Expected<TopologyFile> TopologyFile::load(const std::string& path) {
  // stdio rather than iostreams: its errno is reliable, and reading a directory fails with EISDIR
  // instead of looking like an empty file.
  auto cannot = [&path](const char* what, int err) {
    return Status{HCOMM_ERR_INVALID_ARG, "HCOMM_TOPO_FILE: cannot " + std::string(what) + " '" +
                                             path + "': " + std::strerror(err) +
                                             " (point it at a readable file, or unset it)"};
  };
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return cannot("open", errno);
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
  const int err = errno;
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) return cannot("read", err);
  return parse(text, path);
}

const Placement* TopologyFile::find(const std::string& host) const {
  auto it = index_.find(host);
  return it == index_.end() ? nullptr : &hosts_[it->second];
}

int TopologyFile::distance(const std::string& a, const std::string& b) const {
  if (a == b) return 0;
  const Placement* pa = find(a);
  const Placement* pb = find(b);
  if (pa == nullptr || pb == nullptr) return 3;
  if (pa->switch_name == pb->switch_name) return 1;
  // An empty rack is the switch's own rack, which no other switch shares.
  if (!pa->rack.empty() && pa->rack == pb->rack) return 2;
  return 3;
}

}  // namespace hcomm::topology
