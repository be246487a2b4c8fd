// What the launcher settles before it starts a rank: that the program can be executed, the port
// of the rendezvous root, and which CPU each rank runs on.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace hcomm::tools::run {

/// The errno that execvp(prog) would fail with, or 0. Checked up front so that a typo is one
/// usage error rather than N failed ranks. Searches like execvp: a name with a '/' is a path,
/// anything else is looked up in PATH, whose default is glibc's.
int check_program(const std::string& prog);

/// A port P such that P and P + 1 (the torch store of hcomm.torch under hcomm-run) can be bound
/// now, picked at random below the kernel's ephemeral range (ip_local_port_range), so that no
/// connection's local port takes it before the job binds it; errno set when none is found.
/// Another process may still bind it first; --port is the answer where that matters.
std::optional<int> find_free_port();

/// The CPU of each rank, by rank, or none when ranks are not bound. `bind_to_core` unset: bind
/// when this process may use at least `ranks` CPUs. Bound ranks get the CPUs this process may
/// use in order, round robin (with a note on stderr) when there are fewer CPUs than ranks.
std::vector<int> rank_cpus(int ranks, std::optional<bool> bind_to_core);

}  // namespace hcomm::tools::run
