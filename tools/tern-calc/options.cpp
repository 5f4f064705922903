#include "options.hpp"

#include <CLI/CLI.hpp>
#include <cstdio>

namespace tern::calc {

int parseOptions(int argc, char** argv, Options& o) {
  CLI::App app{
      "tern-calc: predicts collective times from tern's cost model (the same one the library selects with).\n"
      "Examples:\n"
      "  tern-calc --preset roce25-2x2 --size 102.4MB\n"
      "  tern-calc --nodes 2 --ranks-per-node 2 --intra pcie3 --inter roce:25gbit --sweep 8B:8GB\n"
      "  tern-calc --preset roce25-2x2 --model-params 25.6M --grad-dtype fp32 --compute-ms 220\n"
      "  tern-calc --calibrate tcp.json shm.json cluster.json@2 --inter eth:1gbit -o tune.json\n",
      "tern-calc"};
  app.get_formatter()->column_width(34);
  auto* topo = app.add_option_group("topology", "what the job runs on (one of --preset, --topo, --nodes...)");
  topo->add_option("--preset", o.preset, "a named cluster (see --list); NAMExN sets the node count");
  topo->add_option("--topo", o.topoFile, "a topology file: tern JSON, NCCL XML or hwloc XML");
  topo->add_option("--nodes", o.nodes, "number of nodes (overrides the preset's)")->check(CLI::PositiveNumber);
  topo->add_option("--ranks-per-node", o.ranksPerNode, "ranks (GPUs or processes) per node")
      ->check(CLI::PositiveNumber);
  topo->add_option("--intra", o.intra, "intra-node link: shm, loopback, nvlink[2-5], pcie[3-5]");
  topo->add_option("--inter", o.inter, "network: KIND:SPEED, e.g. roce:25gbit, ib:ndr, eth:1gbit");
  topo->add_option("--nics-per-node", o.nicsPerNode, "NICs per node (default 1, DGX presets 8)")
      ->check(CLI::PositiveNumber);
  app.add_flag("--list", o.list, "list the presets and the algorithms, then exit");
  app.add_option("--coll", o.collective,
                 "collective: allreduce (default), allgather, reducescatter, broadcast, "
                 "reduce, alltoall, barrier");
  app.add_option("--size", o.sizes, "message size(s): 102.4MB, 1MiB, 8B, 4K (= 4 KiB)")->take_all();
  app.add_option("--sweep", o.sweep, "size range FIRST:LAST[:xFACTOR], e.g. 8B:8GB (factor 2)");
  app.add_option("--algo", o.algo, "price only this algorithm");
  app.add_option("--compress", o.compress,
                 "also price the compressed collective with CODEC (sign, qsgd:4, topk:0.01, "
                 "fp16, bf16)");
  app.add_option("--dtype", o.dtype, "element type: float (default), half, bfloat16, double, int32, ...");
  app.add_option("--chunk", o.chunk, "pipeline chunk size (TERN_CHUNK_BYTES; default 512KiB)");
  app.add_option("--tune", o.tune, "calibration file to apply (default: $TERN_TUNE_FILE)");
  app.add_flag("--json", o.json, "machine-readable output");
  auto* train = app.add_option_group("training", "data-parallel training what-ifs");
  train->add_option("--model-params", o.modelParams, "gradient elements, e.g. 25.6M");
  train->add_option("--grad-dtype", o.gradDtype, "gradient type: fp32 (default), fp16, bf16");
  train->add_option("--compute-ms", o.computeMs, "compute time per step in ms (forward + backward)")
      ->check(CLI::NonNegativeNumber);
  train->add_option("--overlap", o.overlap, "fraction of the allreduce hidden behind compute (0..1, default 0)")
      ->check(CLI::Range(0.0, 1.0));
  train->add_option("--gpu-hour-price", o.gpuHourPrice, "price of one GPU (rank) hour, for the cost columns")
      ->check(CLI::NonNegativeNumber);
  train->add_option("--max-nodes", o.maxNodes, "scaling table up to this many nodes (default: the topology's)")
      ->check(CLI::PositiveNumber);
  auto* cal = app.add_option_group("calibration", "fit the model to measurements");
  cal->add_option("--calibrate", o.calibrate, "perf JSON files (all_reduce_perf -J); FILE@N: N nodes")->take_all();
  cal->add_option("--check", o.check, "print predicted vs measured busbw for perf JSON files")->take_all();
  cal->add_option("-o,--output", o.output, "write the fitted calibration file here");
  cal->add_option("--min-size", o.minSize, "leave out measurements below this size");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    std::printf("%s", app.help().c_str());
    return 0;
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "tern-calc: %s\n", e.what());
    return 2;
  }
  return -1;
}

}  // namespace tern::calc
