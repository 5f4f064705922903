#include "options.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string_view>

#include "root_addr.hpp"

namespace tern::run {
namespace {

// Printed under --help: users and rank programs both need the exact environment contract and exit codes.
constexpr const char* kFooter = R"(
Every rank gets the launcher's environment plus:
  TERN_RANK=r              this process's rank in the job: K+i*S for i = 0..N-1 (--rank-offset K, default 0;
                           --rank-stride S, default 1)
  TERN_WORLD_SIZE=W        number of ranks in the job (--world-size; default the highest rank + 1, i.e. N)
  TERN_LOCAL_RANK=i        index among the ranks this tern-run started, 0..N-1 (i above)
  TERN_LOCAL_SIZE=N        ranks this tern-run started
  TERN_ROOT_ADDR=HOST:PORT where rank 0 listens (default 127.0.0.1 and a port that was free at launch)
  TERN_SECRET=HEX          32 lowercase hex digits (128 bits) shared by the job's ranks (--secret-file, --secret,
                           or random); ranks prove they know it without sending it (docs/SECURITY.md)
Children run in their own process groups with stdin on /dev/null. SIGINT, SIGTERM and SIGHUP sent to
tern-run are forwarded to every rank's process group.

Several machines (or network namespaces): run one tern-run per node, each with its own --rank-offset, the
same --world-size, --root-addr (an address of the node that runs rank 0) and secret, e.g. for 2 nodes x 2:
  node A: tern-run -n 2 --rank-offset 0 --world-size 4 --root-addr 10.0.0.1:29500 --secret-file ~/.tern/job prog
  node B: tern-run -n 2 --rank-offset 2 --world-size 4 --root-addr 10.0.0.1:29500 --secret-file ~/.tern/job prog
with the file made once by (umask 077; openssl rand -hex 16 > ~/.tern/job) on a shared home, or copied to each
node (--secret HEX32 works too, but shows the secret to every user of the node in ps). Each tern-run
supervises only its own ranks; a rank
that fails makes its peers on other nodes fail too (tern turns a lost peer into an error), so every
tern-run ends.

If a rank exits non-zero or dies of a signal, tern-run reports it, sends SIGTERM to the other ranks,
SIGKILL after --grace-ms, and exits with that rank's exit code (128+signal if it was killed).
Exit codes: 0 all ranks succeeded; 2 bad usage; 124 --timeout expired; 1 launcher error.
Example: tern-run -n 4 -x TERN_ALGO=ring build/bin/all_reduce_perf -b 8 -e 64M)";

// The launcher owns these: a -x for one of them would silently break the job (every rank the same TERN_RANK).
constexpr std::array<std::string_view, 6> kReservedNames = {"TERN_RANK",       "TERN_WORLD_SIZE", "TERN_LOCAL_RANK",
                                                            "TERN_LOCAL_SIZE", "TERN_ROOT_ADDR",  "TERN_SECRET"};

// CLI11's usage line cannot express "the rest is the program's command line"; say it ourselves.
class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_usage(const CLI::App* /*app*/, std::string name) const override {
    return "Usage: " + name + " -n N [OPTIONS] PROGRAM [ARGS...]\n";
  }
};

ParseOutcome UsageError(const std::string& message) {
  std::fprintf(stderr, "tern-run: %s (see tern-run --help)\n", message.c_str());
  return ParseOutcome{std::nullopt, kUsageExitCode};
}

// The file's content without surrounding whitespace, or nullopt with *why set. A file other users can read is
// refused: the secret is what keeps them out of the job.
std::optional<std::string> ReadSecretFile(const std::string& path, std::string* why) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *why = std::strerror(errno);
    return std::nullopt;
  }
  struct stat st {};
  std::string text;
  if (::fstat(fd, &st) == 0 && (st.st_mode & 077) != 0) {
    ::close(fd);
    *why = "other users can read it (chmod 600 it)";
    return std::nullopt;
  }
  char buf[256];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || text.size() > 4096) break;
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  size_t b = text.find_first_not_of(" \t\r\n");
  size_t e = text.find_last_not_of(" \t\r\n");
  text = b == std::string::npos ? std::string() : text.substr(b, e - b + 1);
  if (text.size() != 32) {
    *why = "expected 32 hex digits (128 bits)";
    return std::nullopt;
  }
  return text;
}

// 32 hex digits, any case: what the library's Secret::fromHex accepts.
bool IsValidSecret(std::string_view hex) {
  if (hex.size() != 32) return false;
  for (char c : hex) {
    bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    if (!ok) return false;
  }
  return true;
}

bool IsValidEnvName(std::string_view name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  for (char c : name) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

ParseOutcome ParseOptions(int argc, char** argv) {
  Options opts;
  std::vector<std::string> env_specs;
  std::optional<int> nprocs;
  std::optional<int> rank_offset;
  std::optional<int> rank_stride;
  std::optional<int> world_size;
  std::string bind_to = "auto";
  std::optional<std::string> secret_file;

  CLI::App app{"tern-run: start N ranks of a tern job on this machine and supervise them.", "tern-run"};
  app.formatter(std::make_shared<HelpFormatter>());
  app.footer(kFooter);
  // option_text() replaces CLI11's generated "TYPE:CHECK" labels, which read poorly in --help.
  app.add_option("-n,--nprocs", nprocs, "Number of ranks to start (required, at least 1)")->option_text("N");
  app.add_option("--root-addr", opts.root_addr, "Address rank 0 listens on, exported as TERN_ROOT_ADDR")
      ->option_text("HOST:PORT");
  app.add_option("--rank-offset", rank_offset,
                 "Global rank of the first rank started here (multi-node: one tern-run per node; default 0)")
      ->option_text("K");
  app.add_option("--rank-stride", rank_stride,
                 "Global ranks started here are K, K+S, K+2S, ... (e.g. a rank order that alternates between "
                 "nodes: --rank-offset NODE --rank-stride NODES; default 1)")
      ->option_text("S");
  app.add_option("--world-size", world_size,
                 "Ranks in the whole job, across every tern-run (default: the highest rank started here + 1); needs "
                 "--root-addr and --secret-file (or --secret) when larger than -n")
      ->option_text("W");
  app.add_option("--secret", opts.secret,
                 "The job's secret, exported as TERN_SECRET; give every tern-run of a multi-node job the same one "
                 "(default: 128 random bits)")
      ->option_text("HEX32");
  app.add_option("--secret-file", secret_file,
                 "Read the job's secret (32 hex digits) from PATH instead of the command line, where any user of the "
                 "machine can see it in ps")
      ->option_text("PATH");
  // allow_extra_args(false): each -x takes exactly one value, so `-x A=1 prog` does not swallow prog.
  app.add_option("-x", env_specs, "Set an extra environment variable for every rank (repeatable)")
      ->option_text("NAME=VALUE")
      ->allow_extra_args(false);
  // trigger_on_parse: the callbacks run in command-line order, so the last of the two flags wins.
  app.add_flag_callback(
         "--tag-output", [&opts] { opts.tag_output = true; },
         "Prefix each output line with [rank] and write lines whole (the default)")
      ->trigger_on_parse();
  app.add_flag_callback(
         "--no-tag-output", [&opts] { opts.tag_output = false; },
         "Pass the ranks' output through byte for byte as it arrives")
      ->trigger_on_parse();
  app.add_option("--grace-ms", opts.grace_ms, "After SIGTERM, wait this long before SIGKILL (default 3000)")
      ->option_text("MS")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--timeout", opts.timeout_s, "Terminate every rank and exit 124 after this long (default: none)")
      ->option_text("SECONDS")
      ->check(CLI::PositiveNumber);
  app.add_option("--bind-to", bind_to,
                 "Bind each rank to a CPU: core (local rank i on the i-th usable CPU), none, or auto (core when this "
                 "tern-run starts the whole job on no more ranks than CPUs; the default)")
      ->option_text("auto|core|none");
  // Everything from the first non-option on is the rank program's command line, options included.
  app.prefix_command();

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return ParseOutcome{std::nullopt, app.exit(e)};
  } catch (const CLI::ParseError& e) {
    return UsageError(e.what());
  }

  opts.command = app.remaining();
  if (!opts.command.empty() && opts.command.front() == "--") {
    opts.command.erase(opts.command.begin());
  } else if (!opts.command.empty() && opts.command.front().starts_with("-")) {
    return UsageError("unknown option " + opts.command.front());
  }

  if (!ParseBindTo(bind_to, &opts.bind_to))
    return UsageError("--bind-to expects auto, core or none, got '" + bind_to + "'");
  if (!nprocs) return UsageError("missing -n N (number of ranks)");
  if (*nprocs < 1) return UsageError("-n must be at least 1, got " + std::to_string(*nprocs));
  opts.nprocs = *nprocs;
  if (opts.command.empty()) return UsageError("missing program to run");
  opts.rank_offset = rank_offset.value_or(0);
  opts.rank_stride = rank_stride.value_or(1);
  if (opts.rank_offset < 0) {
    return UsageError("--rank-offset must be at least 0, got " + std::to_string(opts.rank_offset));
  }
  if (opts.rank_stride < 1) {
    return UsageError("--rank-stride must be at least 1, got " + std::to_string(opts.rank_stride));
  }
  long long last_rank = opts.rank_offset + static_cast<long long>(opts.nprocs - 1) * opts.rank_stride;
  if (last_rank > (1 << 24)) return UsageError("global rank " + std::to_string(last_rank) + " is too large");
  opts.world_size = world_size.value_or(static_cast<int>(last_rank + 1));
  if (opts.world_size < 1) {
    return UsageError("--world-size must be at least 1, got " + std::to_string(opts.world_size));
  }
  if (last_rank >= opts.world_size) {
    return UsageError("global rank " + std::to_string(last_rank) + " (--rank-offset " +
                      std::to_string(opts.rank_offset) + ", -n " + std::to_string(opts.nprocs) +
                      (opts.rank_stride > 1 ? ", --rank-stride " + std::to_string(opts.rank_stride) : "") +
                      ") does not fit --world-size " + std::to_string(opts.world_size));
  }
  if (secret_file) {
    if (opts.secret) return UsageError("give either --secret or --secret-file, not both");
    std::string why;
    opts.secret = ReadSecretFile(*secret_file, &why);
    if (!opts.secret) return UsageError("--secret-file " + *secret_file + ": " + why);
    // Not echoed back as --secret's message would: it may be a real secret with a typo.
    if (!IsValidSecret(*opts.secret)) return UsageError("--secret-file " + *secret_file + ": expected 32 hex digits");
  }
  if (opts.secret) {
    if (!IsValidSecret(*opts.secret)) {
      return UsageError("--secret expects 32 hex digits (128 bits), got '" + *opts.secret + "'");
    }
    for (char& c : *opts.secret) {
      if (c >= 'A' && c <= 'F') c = static_cast<char>(c - 'A' + 'a');
    }
  }
  if (opts.nprocs < opts.world_size) {
    // Part of a larger job: the other tern-runs must find the same root and present the same secret; neither can
    // be made up here.
    if (!opts.root_addr) {
      return UsageError("a job spread over several tern-runs (-n " + std::to_string(opts.nprocs) + " < --world-size " +
                        std::to_string(opts.world_size) + ") needs --root-addr HOST:PORT, the same for every node");
    }
    if (!opts.secret) {
      return UsageError("a job spread over several tern-runs (-n " + std::to_string(opts.nprocs) + " < --world-size " +
                        std::to_string(opts.world_size) +
                        ") needs --secret-file PATH (or --secret HEX32), the same secret for every node");
    }
  }
  if (opts.root_addr && !IsValidRootAddr(*opts.root_addr)) {
    return UsageError("--root-addr expects HOST:PORT with a port in 1..65535, got '" + *opts.root_addr + "'");
  }

  for (const std::string& spec : env_specs) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos) return UsageError("-x expects NAME=VALUE, got '" + spec + "'");
    std::string name = spec.substr(0, eq);
    if (!IsValidEnvName(name)) return UsageError("-x: invalid variable name '" + name + "'");
    for (std::string_view reserved : kReservedNames) {
      if (name == reserved) {
        return UsageError("-x cannot set " + name + ": tern-run sets it" +
                          (name == "TERN_ROOT_ADDR"    ? std::string(" (use --root-addr)")
                           : name == "TERN_SECRET"     ? std::string(" (use --secret-file or --secret)")
                           : name == "TERN_RANK"       ? std::string(" (use --rank-offset)")
                           : name == "TERN_WORLD_SIZE" ? std::string(" (use --world-size)")
                                                       : std::string()));
      }
    }
    opts.extra_env.emplace_back(std::move(name), spec.substr(eq + 1));
  }
  return ParseOutcome{std::move(opts), 0};
}

}  // namespace tern::run
