#include "rank_stream.hpp"

namespace tern::run {

RankStream::RankStream(OutputSink* sink, bool tag, std::string prefix)
    : sink_(sink), tag_(tag), prefix_(std::move(prefix)) {}

void RankStream::Append(std::string_view data) {
  if (!tag_) {
    sink_->Write(data);
    return;
  }
  std::string batch;
  while (!data.empty()) {
    size_t newline = data.find('\n');
    if (newline == std::string_view::npos) {
      partial_.append(data);
      break;
    }
    batch += prefix_;
    batch += partial_;
    batch.append(data.substr(0, newline + 1));
    partial_.clear();
    data.remove_prefix(newline + 1);
  }
  if (partial_.size() >= kMaxLineBytes) {
    batch += prefix_;
    batch += partial_;
    batch += '\n';
    partial_.clear();
  }
  if (!batch.empty()) sink_->Write(batch);
}

void RankStream::Finish() {
  if (!tag_ || partial_.empty()) return;
  sink_->Write(prefix_ + partial_ + "\n");
  partial_.clear();
}

std::string RankPrefix(int rank, int world_size) {
  std::string number = std::to_string(rank);
  size_t width = std::to_string(world_size > 1 ? world_size - 1 : 0).size();
  if (number.size() < width) number.insert(0, width - number.size(), ' ');
  return "[" + number + "] ";
}

}  // namespace tern::run
