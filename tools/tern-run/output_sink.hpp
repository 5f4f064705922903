// tern-run's own stdout or stderr, where the ranks' output ends up.
#pragma once

#include <string_view>

namespace tern::run {

class OutputSink {
 public:
  explicit OutputSink(int fd) : fd_(fd) {}

  // Writes all of data, retrying partial writes. If the reader has gone away (EPIPE, e.g. `tern-run ... | head`),
  // output is dropped from then on rather than failing the job: the ranks' pipes must keep being drained so that
  // they never block on a full pipe.
  void Write(std::string_view data);

 private:
  int fd_;
  bool broken_ = false;
};

}  // namespace tern::run
