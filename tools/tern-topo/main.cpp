// tern-topo: shows the topology tern sees: this machine's (detected, or TERN_TOPO_FILE's) or a file's, as a text
// tree with path matrices (default), Graphviz dot (--dot) or tern's JSON (--json).
//
//   tern-topo                                  this host
//   tern-topo --file topo/dgx-h100.json        a file: tern JSON, NCCL topology XML or hwloc XML (told by content)
//   tern-topo --file topo/dgx-h100.json --dot | dot -Tpng -o dgx-h100.png
//
// Exit status: 0 on success, 2 on a bad command line or an unreadable/invalid file (one line on stderr), 1 on any
// other failure.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "base/error.hpp"
#include "topo/render.hpp"
#include "topo/topo_file.hpp"
#include "topo/topo_json.hpp"

int main(int argc, char** argv) {
  CLI::App app{
      "Show the topology tern sees: hosts, CPU packages, NUMA nodes, PCIe switches, GPUs, NICs, their links and the "
      "path types between devices (like `nvidia-smi topo -m`).\nWithout --file: this host (hwloc detection, or the "
      "file named by TERN_TOPO_FILE; TERN_TOPO_DUMP_FILE also writes it as JSON).",
      "tern-topo"};
  std::string file;
  bool dot = false;
  bool json = false;
  app.add_option("-f,--file", file,
                 "topology file: tern JSON, NCCL topology XML or hwloc XML (format told by content)");
  CLI::Option* dotFlag = app.add_flag("--dot", dot, "print Graphviz dot (one cluster per host)");
  app.add_flag("--json", json, "print the topology as tern JSON")->excludes(dotFlag);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help, or the error with a usage hint
    return code == 0 ? 0 : 2;
  }

  try {
    const tern::topo::JobTopology job =
        file.empty() ? tern::topo::singleHostJob(tern::topo::localHostTopology()) : tern::topo::loadTopologyFile(file);
    const std::string out = dot    ? tern::topo::renderDot(job)
                            : json ? tern::topo::dumpJobJson(job)
                                   : tern::topo::renderText(job);
    std::fwrite(out.data(), 1, out.size(), stdout);
    return 0;
  } catch (const tern::Error& e) {
    std::fprintf(stderr, "tern-topo: %s\n", e.what());
    return e.code() == ternInvalidArgument ? 2 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tern-topo: %s\n", e.what());
    return 1;
  }
}
