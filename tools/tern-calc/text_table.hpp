// Left-aligned text columns for tern-calc's reports.
#pragma once

#include <string>
#include <vector>

namespace tern::calc {

class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header) { rows_.push_back(std::move(header)); }
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  // Every row on its own line, columns padded to their widest cell, two spaces apart.
  std::string str(const std::string& indent = "  ") const;

 private:
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace tern::calc
