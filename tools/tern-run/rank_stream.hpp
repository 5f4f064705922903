// One rank's stdout or stderr on its way to tern-run's: cut into whole lines and tagged with the rank, so lines
// from different ranks never mix mid-line.
#pragma once

#include <string>
#include <string_view>

#include "output_sink.hpp"

namespace tern::run {

class RankStream {
 public:
  // A line longer than this is written out (ending it with a newline) rather than buffered without bound.
  static constexpr size_t kMaxLineBytes = 64 * 1024;

  // prefix: put before each line (e.g. "[3] "); empty with tag == false for byte-exact passthrough.
  RankStream(OutputSink* sink, bool tag, std::string prefix);

  // Forwards the complete lines in data (plus what earlier calls left pending) in one write.
  void Append(std::string_view data);

  // Flushes a last line that had no newline, adding one so the next writer starts on a fresh line.
  void Finish();

 private:
  OutputSink* sink_;
  bool tag_;
  std::string prefix_;
  std::string partial_;  // bytes after the last newline seen
};

// "[r] " with r right-aligned to the width of world_size-1, so columns line up across ranks.
std::string RankPrefix(int rank, int world_size);

}  // namespace tern::run
