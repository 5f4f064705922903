// The shared-memory IntraNode: a mesh of segments (mesh.hpp), the FIFO transport over it (shm_transport.hpp) and the
// direct collectives (direct_collectives.hpp), plus the cost model the planner compares them with.
#include "transport/shm/intra_node.hpp"

#include "core/algo_choice.hpp"
#include "core/dtype.hpp"
#include "core/env.hpp"
#include "core/log.hpp"
#include "transport/shm/direct_collectives.hpp"
#include "transport/shm/direct_cost.hpp"
#include "transport/shm/mesh.hpp"
#include "transport/shm/shm_transport.hpp"
#include "transport/shm/spin_policy.hpp"
#include "transport/shm/watchdog.hpp"

namespace tern {

namespace {

class ShmIntraNode : public IntraNode {
 public:
  ShmIntraNode(std::unique_ptr<shm::Mesh> mesh, const IntraNodeSetup& setup)
      : mesh_(std::move(mesh)),
        dog_(mesh_.get(), setup.tcp, setup.timeoutMs),
        spin_(shm::chooseSpinPolicy(mesh_->localRanks())),
        transport_(mesh_.get(), &dog_, spin_),
        direct_(mesh_.get(), &dog_, spin_),
        algoOverride_(AlgoOverride::parse(knobs().algo)) {}

  bool tryRun(Operation& op, const ExecContext& ctx) override {
    shm::DirectAlgorithm algo = choose(op.args);
    if (algo == shm::DirectAlgorithm::kNone) return false;
    direct_.run(op, ctx, algo);
    return true;
  }

  Transport* transport() override { return &transport_; }

  double predictSeconds(const CollArgs& args) const override {
    shm::DirectAlgorithm algo = choose(args);
    if (algo == shm::DirectAlgorithm::kNone) return -1.0;
    return shm::predictDirectSeconds(args, mesh_->nranks(), algo == shm::DirectAlgorithm::kSmall);
  }

  std::string algorithmFor(const CollArgs& args) const override {
    switch (choose(args)) {
      case shm::DirectAlgorithm::kSmall:
        return "shm_direct_small";
      case shm::DirectAlgorithm::kPipelined:
        return "shm_direct";
      default:
        return "";
    }
  }

 private:
  shm::DirectAlgorithm choose(const CollArgs& args) const {
    // Direct algorithms need every rank here; a TERN_ALGO that forces a schedule algorithm for this collective wins.
    if (!mesh_->allLocal() || !algoOverride_.forced(args.coll).empty()) return shm::DirectAlgorithm::kNone;
    return direct_.choose(args);
  }

  std::unique_ptr<shm::Mesh> mesh_;
  shm::Watchdog dog_;
  shm::SpinPolicy spin_;
  shm::ShmTransport transport_;
  shm::DirectCollectives direct_;
  AlgoOverride algoOverride_;
};

}  // namespace

std::unique_ptr<IntraNode> createIntraNode(const IntraNodeSetup& setup) {
  if (knobs().shmDisable) {
    TERN_LOG(kInfo, kShm, setup.rank, "shared-memory transport disabled (TERN_SHM_DISABLE)");
    return nullptr;
  }
  auto mesh = shm::Mesh::create(setup);
  if (!mesh) return nullptr;
  return std::make_unique<ShmIntraNode>(std::move(mesh), setup);
}

}  // namespace tern
