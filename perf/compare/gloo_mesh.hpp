// How the Gloo drivers (gloo_allreduce, gloo_collectives) start: a TCP device bound to an address or interface, a
// full mesh set up through a FileStore directory every rank can see, and the store's keys removed once every rank
// has connected. Header-only and free of tern, as the drivers.
#pragma once

#include <gloo/barrier.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <sys/socket.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>

namespace tern::compare {

struct GlooMeshOptions {
  std::string store;   // the FileStore directory
  std::string prefix;  // the keys' prefix in it: distinct concurrent (or half-finished earlier) runs need distinct ones
  std::string host = "127.0.0.1";
  std::string iface;  // overrides host when set
  int timeout_s = 600;
};

inline void GlooBarrier(const std::shared_ptr<gloo::Context>& ctx) {
  gloo::BarrierOptions opts(ctx);
  gloo::barrier(opts);
}

inline std::shared_ptr<gloo::Context> ConnectGlooMesh(const GlooMeshOptions& g, int rank, int n) {
  gloo::transport::tcp::attr attr;
  if (!g.iface.empty()) {
    attr.iface = g.iface;
  } else {
    attr.hostname = g.host;
  }
  attr.ai_family = AF_INET;
  auto dev = gloo::transport::tcp::CreateDevice(attr);
  std::error_code ec;
  std::filesystem::create_directories(g.store, ec);  // FileStore needs the directory to exist.
  gloo::rendezvous::FileStore file_store(g.store);
  gloo::rendezvous::PrefixStore store(g.prefix, file_store);
  auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, n);
  ctx->setTimeout(std::chrono::seconds(g.timeout_s));
  ctx->connectFullMesh(store, dev);
  GlooBarrier(ctx);
  // Everyone has read everyone's address: drop our keys so the same --store directory can serve the next run (a
  // stale key would otherwise hand the next run a dead address).
  for (const auto& path : file_store.getAllKeyFilePaths()) std::filesystem::remove(path, ec);
  return ctx;
}

}  // namespace tern::compare
