// Placeholder until the shared-memory transport lands: no intra-node fast path, and ternMemAlloc is plain memory.
#include <cstdlib>

#include "transport/shm/intra_node.hpp"

namespace tern {

std::unique_ptr<IntraNode> createIntraNode(const IntraNodeSetup&) { return nullptr; }

void* shmAlloc(size_t bytes) { return std::aligned_alloc(4096, (bytes + 4095) & ~static_cast<size_t>(4095)); }

void shmFree(void* p) { std::free(p); }

}  // namespace tern
