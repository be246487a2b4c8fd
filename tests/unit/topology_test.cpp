// Machine topology detection (hwloc) and the HCOMM_TOPO_FILE parser.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdio>
#include <string>

#include "topology/machine_topology.hpp"
#include "topology/topology_file.hpp"

using namespace hcomm;
using namespace hcomm::topology;

namespace {

// The error for `text`, checked to be an INVALID_ARG that names the origin and the line.
std::string parse_error(const std::string& text, int line) {
  auto r = TopologyFile::parse(text, "topo.txt");
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == HCOMM_ERR_INVALID_ARG);
  const std::string& msg = r.status().message();
  CHECK_MESSAGE(msg.rfind("topo.txt:" + std::to_string(line) + ": ", 0) == 0, msg);
  return msg;
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("machine topology: hwloc detects this machine") {
  auto t = MachineTopology::detect();
  REQUIRE_MESSAGE(t.ok(), t.status().to_string());
  CHECK(t->pus >= 1);
  CHECK(t->cores >= 1);
  CHECK(t->cores <= t->pus);
  CHECK(t->packages >= 1);
  for (const NumaNode& n : t->numa) {
    CHECK(n.os_index >= 0);
    CHECK_FALSE(n.cpus.empty());
  }
  for (const Nic& n : t->nics) {
    CHECK_FALSE(n.name.empty());
    CHECK_FALSE(n.kind.empty());
    CHECK(n.name != "lo");  // loopback is no device
  }
  const std::string text = t->describe();
  CHECK_FALSE(text.empty());
  CHECK(contains(text, "PU"));
  for (const Nic& n : t->nics) CHECK(contains(text, "nic " + n.name + ":"));
}

TEST_CASE("topology file: hosts, switches, racks, comments and distances") {
  const std::string text =
      "# two racks\n"
      "\n"
      "host node01 switch sw1 rack A\n"
      "   host\tnode02  switch sw1   # rack inherited from sw1\n"
      "host node03 rack A switch sw2\n"
      "host node04 switch sw3 rack B\n"
      "host node05 switch sw4\n"
      "host node06 switch sw5\n"
      "   # indented comment\n"
      "host 0123abcd-host-id switch sw3 rack B";  // no final newline
  auto r = TopologyFile::parse(text, "topo.txt");
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  const TopologyFile& f = *r;
  CHECK(f.hosts().size() == 7);

  const Placement* p2 = f.find("node02");
  REQUIRE(p2 != nullptr);
  CHECK(p2->switch_name == "sw1");
  CHECK(p2->rack == "A");
  CHECK(p2->line == 4);
  REQUIRE(f.find("node05") != nullptr);
  CHECK(f.find("node05")->rack.empty());  // a rack of its own
  CHECK(f.find("node99") == nullptr);
  CHECK(f.find("0123abcd-host-id") != nullptr);

  CHECK(f.distance("node01", "node01") == 0);
  CHECK(f.distance("node99", "node99") == 0);  // the same host, listed or not
  CHECK(f.distance("node01", "node02") == 1);
  CHECK(f.distance("node04", "0123abcd-host-id") == 1);
  CHECK(f.distance("node01", "node03") == 2);
  CHECK(f.distance("node02", "node03") == 2);
  CHECK(f.distance("node01", "node04") == 3);
  CHECK(f.distance("node05", "node06") == 3);  // two switches without racks: two racks
  CHECK(f.distance("node01", "node99") == 3);
  CHECK(f.distance("node99", "node01") == 3);

  auto empty = TopologyFile::parse("# nothing yet\n\n", "topo.txt");
  REQUIRE(empty.ok());
  CHECK(empty->hosts().empty());
  CHECK(empty->distance("a", "b") == 3);
}

TEST_CASE("topology file: every error names the file and line and says what is expected") {
  const std::string ok = "host a switch s1\n";
  CHECK(contains(parse_error(ok + "node b switch s1\n", 2), "unknown keyword 'node'"));
  CHECK(contains(parse_error(ok + "host b switch s1 room 4\n", 2), "unknown keyword 'room'"));
  CHECK(contains(parse_error("host\n", 1), "'host' needs a name"));
  CHECK(contains(parse_error("host switch s1\n", 1), "'host' needs a name"));
  CHECK(contains(parse_error(ok + "host c switch s2\n" + "host b switch\n", 3),
                 "'switch' needs a value"));
  CHECK(contains(parse_error("host b switch s1 rack\n", 1), "'rack' needs a value"));
  CHECK(contains(parse_error("host b switch rack r1\n", 1), "'switch' needs a value"));
  CHECK(contains(parse_error("host b rack r1\n", 1), "no 'switch <switch>'"));
  CHECK(contains(parse_error("host b\n", 1), "no 'switch <switch>'"));
  CHECK(contains(parse_error("host b switch s1 switch s2\n", 1), "'switch' given twice"));
  CHECK(contains(parse_error("# c\n" + ok + "\nhost a switch s2\n", 4),
                 "host 'a' is listed twice (first on line 2)"));
  CHECK(contains(parse_error("host a switch s1 rack r1\nhost b switch s1 rack r2\n", 2),
                 "switch 's1' is in rack 'r2' here but in rack 'r1' on line 1"));
  // Every message says what a line should look like.
  CHECK(contains(parse_error("bogus\n", 1), "host <name> switch <switch> [rack <rack>]"));
}

TEST_CASE("topology file: load() reads a file and reports one it cannot read") {
  auto missing = TopologyFile::load("/nonexistent/hcomm-topo.txt");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == HCOMM_ERR_INVALID_ARG);
  CHECK(contains(missing.status().message(), "/nonexistent/hcomm-topo.txt"));
  CHECK(contains(missing.status().message(), "No such file or directory"));

  auto dir = TopologyFile::load("/");
  REQUIRE_FALSE(dir.ok());
  CHECK(contains(dir.status().message(), "Is a directory"));

  const std::string path = "/tmp/hcomm-topology-test-" + std::to_string(::getpid()) + ".txt";
  auto write = [&path](const char* text) {
    std::FILE* f = std::fopen(path.c_str(), "w");
    REQUIRE(f != nullptr);
    std::fputs(text, f);
    std::fclose(f);
  };
  write("host x switch s rack r\nhost y switch s\n");
  auto good = TopologyFile::load(path);
  REQUIRE_MESSAGE(good.ok(), good.status().to_string());
  CHECK(good->distance("x", "y") == 1);

  write("host x switch s rack r\nhost y switch s\nhost y switch t\n");
  auto duplicate = TopologyFile::load(path);
  std::remove(path.c_str());
  REQUIRE_FALSE(duplicate.ok());
  CHECK(contains(duplicate.status().message(), path + ":3: host 'y' is listed twice"));
}
