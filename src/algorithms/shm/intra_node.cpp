// The shared-memory IntraNode: a mesh of segments (mesh.hpp), the FIFO transport over it (shm_transport.hpp) and the
// shared-memory algorithms of the catalogue (direct_collectives.hpp, shm_catalogue.hpp), priced by the planner's
// cost parameters (CostParams::shmAlgorithms, handed in by the communicator). It lives with the algorithms: the
// transport below it knows nothing of them.
#include "algorithms/shm/intra_node.hpp"

#include "algorithms/algo_override.hpp"
#include "algorithms/shm/direct_collectives.hpp"
#include "algorithms/shm/shm_catalogue.hpp"
#include "base/dtype.hpp"
#include "base/env.hpp"
#include "base/log.hpp"
#include "transport/shm/mesh.hpp"
#include "transport/shm/shm_transport.hpp"
#include "transport/shm/watchdog.hpp"
#include "transport/spin_policy.hpp"

namespace tern {

namespace {

class ShmIntraNode : public IntraNode {
 public:
  ShmIntraNode(std::unique_ptr<shm::Mesh> mesh, const IntraNodeSetup& setup, const std::string& algo,
               const std::function<shm::ShmAlgorithmCost()>& cost)
      : mesh_(std::move(mesh)),
        dog_(mesh_.get(), setup.tcp, setup.timeoutMs),
        spin_(spinPolicyFor(mesh_->ranksOwnCpus())),
        transport_(mesh_.get(), &dog_, spin_),
        direct_(mesh_.get(), &dog_, spin_),
        algoOverride_(AlgoOverride::parse(algo)),
        params_(cost()) {}

  const char* tryRun(Operation& op, const ExecContext& ctx) override {
    const shm::ShmPlan p = plan(op.args);
    if (p.algo == shm::ShmAlgorithm::kNone) return nullptr;
    return shm::shmAlgorithmName(direct_.run(op, ctx, p));
  }

  Transport* transport() override { return &transport_; }

  double predictSeconds(const CollArgs& args) const override {
    const shm::ShmPlan p = plan(args);
    if (p.algo == shm::ShmAlgorithm::kNone) return -1.0;
    return shm::shmSeconds(direct_.expectedAlgorithm(args, p), args, mesh_->nranks(), params_);
  }

  std::string algorithmFor(const CollArgs& args) const override {
    const shm::ShmPlan p = plan(args);
    return shm::shmAlgorithmName(direct_.expectedAlgorithm(args, p));
  }

 private:
  // The catalogue's decision for this call: none unless every rank is here; a forced entry as named (an error
  // when the arguments rule it out); otherwise the default, less what TERN_ALGO excludes.
  shm::ShmPlan plan(const CollArgs& args) const {
    if (!mesh_->allLocal()) return {};
    const int n = mesh_->nranks();
    shm::ShmPlan p;
    if (algoOverride_.rules.empty()) {
      p.algo = defaultAlgorithm(args);
      return p;
    }
    const std::string forced = algoOverride_.forced(args.coll);
    if (!forced.empty()) {
      const shm::ShmAlgorithm f = shm::shmAlgorithmNamed(forced);
      if (f == shm::ShmAlgorithm::kNone) return {};  // a schedule algorithm is forced for this collective
      std::string why;
      if (!shm::shmApplies(f, args, n, &why)) {
        throwError(ternInvalidUsage, "TERN_ALGO=%s cannot run this %s of %zu elements of %s on %d ranks: %s",
                   forced.c_str(), collectiveName(args.coll), args.count, dataTypeName(args.dtype), n, why.c_str());
      }
      return shm::forcedShmPlan(f);
    }
    p.allowCma = !algoOverride_.excluded(args.coll, "shm_cma");
    p.algo = p.allowCma ? defaultAlgorithm(args) : shm::defaultShmAlgorithm(args, n);
    if (p.algo == shm::ShmAlgorithm::kNone || algoOverride_.excluded(args.coll, shm::shmAlgorithmName(p.algo))) {
      return {};
    }
    p.allowMapped = !algoOverride_.excluded(args.coll, "shm_mapped");
    return p;
  }

  // The catalogue's default, with the CMA form (reached through the chunked path) in place of the one-phase form
  // where it pays and every rank can take it.
  shm::ShmAlgorithm defaultAlgorithm(const CollArgs& args) const {
    const shm::ShmAlgorithm a = shm::defaultShmAlgorithm(args, mesh_->nranks());
    return a == shm::ShmAlgorithm::kSmall && direct_.cmaReplacesOnePhase(args) ? shm::ShmAlgorithm::kPipelined : a;
  }

  std::unique_ptr<shm::Mesh> mesh_;
  shm::Watchdog dog_;
  SpinPolicy spin_;
  shm::ShmTransport transport_;
  shm::DirectCollectives direct_;
  AlgoOverride algoOverride_;
  shm::ShmAlgorithmCost params_;
};

}  // namespace

std::unique_ptr<IntraNode> createIntraNode(const IntraNodeSetup& setup, const std::string& algo,
                                           const std::function<shm::ShmAlgorithmCost()>& cost) {
  if (knobs().shmDisable) {
    TERN_LOG(kInfo, kShm, setup.rank, "shared-memory transport disabled (TERN_SHM_DISABLE)");
    return nullptr;
  }
  auto mesh = shm::Mesh::create(setup);
  if (!mesh) return nullptr;
  return std::make_unique<ShmIntraNode>(std::move(mesh), setup, algo, cost);
}

}  // namespace tern
