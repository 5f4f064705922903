// One line per event: "host:pid:tid tern RANK [SUBSYS] LEVEL message". Controlled by TERN_DEBUG (WARN, INFO,
// TRACE), TERN_DEBUG_SUBSYS and TERN_DEBUG_FILE (%h host, %p pid). Errors are always printed at WARN and above.
#pragma once

namespace tern {

enum class LogLevel { kNone = 0, kWarn = 1, kInfo = 2, kTrace = 3 };
enum class Subsys { kInit, kNet, kColl, kShm, kTopo, kTune, kCompress, kCount };

bool logEnabled(LogLevel level, Subsys subsys);
void logLine(LogLevel level, Subsys subsys, int rank, const char* fmt, ...) __attribute__((format(printf, 4, 5)));

#define TERN_LOG(level, subsys, rank, ...)                                                   \
  do {                                                                                       \
    if (::tern::logEnabled(::tern::LogLevel::level, ::tern::Subsys::subsys))                 \
      ::tern::logLine(::tern::LogLevel::level, ::tern::Subsys::subsys, (rank), __VA_ARGS__); \
  } while (0)

}  // namespace tern
