// The environment each rank starts with: tern-run's own environment, the -x overrides, and the job contract.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace tern::run {

struct JobContract {
  int world_size = 0;     // ranks in the whole job
  int local_size = 0;     // ranks this tern-run starts (TERN_LOCAL_SIZE)
  int rank_offset = 0;    // global rank of local rank 0
  int rank_stride = 1;    // global rank of local rank i: rank_offset + i * rank_stride
  std::string root_addr;  // HOST:PORT
  std::string secret;     // 32 hex digits
};

class RankEnvironment {
 public:
  // base: "NAME=VALUE" entries (normally environ); extra: the -x pairs, applied over base in order.
  RankEnvironment(const std::vector<std::string>& base, const std::vector<std::pair<std::string, std::string>>& extra,
                  JobContract contract);

  // The complete environment for the local_rank-th rank this tern-run starts (global rank rank_offset +
  // local_rank * rank_stride), as "NAME=VALUE" strings ready for execve.
  std::vector<std::string> ForRank(int local_rank) const;

 private:
  std::vector<std::pair<std::string, std::string>> vars_;  // in first-seen order, names unique
  JobContract contract_;
};

// The calling process's environment as "NAME=VALUE" strings.
std::vector<std::string> CurrentEnvironment();

}  // namespace tern::run
