// tern._C: the Python face of the tern backend. torch.distributed's own types (Store, Backend, Work) are pybind11
// types of torch's module, so the backend is a subclass of theirs and torch's Python code drives it unchanged.
#include <pybind11/chrono.h>
#include <pybind11/pybind11.h>
#include <torch/csrc/utils/pybind.h>
#include <torch/python.h>

#include "backend.hpp"

namespace py = pybind11;
using tern::torch_backend::Backend;

PYBIND11_MODULE(_C, m) {
  m.doc() = "tern's torch.distributed backend (use `import tern.torch`)";
  // Registers c10d::Store, c10d::Backend and c10d::Work with pybind11 before the subclass names them.
  py::module_::import("torch.distributed");

  py::class_<Backend, c10d::Backend, c10::intrusive_ptr<Backend>>(m, "Backend")
      .def(py::init([](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                       std::chrono::milliseconds timeout, const std::string& groupName, const std::string& compress) {
             return c10::make_intrusive<Backend>(store, rank, size, timeout, groupName, compress);
           }),
           py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("timeout"), py::arg("group_name") = "",
           py::arg("compress") = "", py::call_guard<py::gil_scoped_release>(),
           "Joins the group's tern communicator: rank 0 publishes a unique id in the store, the others read it. "
           "compress: the codec its sum and average allreduces may compress with (TERN_COMPRESS syntax; \"\" keeps "
           "TERN_COMPRESS).")
      .def("allreduce_compressed", &Backend::allreduceCompressed, py::arg("tensor"), py::arg("codec"), py::arg("key"),
           py::arg("average"), py::call_guard<py::gil_scoped_release>(),
           "Compressed allreduce in place (sign, qsgd:B, topk:R, fp16, bf16), error feedback kept per key.");

  m.def(
      "version",
      [] {
        int v = 0;
        ternGetVersion(&v);
        return v;
      },
      "TERN_VERSION_CODE of the loaded libtern (major*10000 + minor*100 + patch).");
}
