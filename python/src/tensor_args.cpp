#include "tensor_args.hpp"

#include <c10/util/Exception.h>

namespace tern::torch_backend {

void Buffer::writeBack() const {
  if (data.data_ptr() == user.data_ptr() && user.is_contiguous()) return;
  at::Tensor target = user;
  if (user.is_complex()) target = at::view_as_real(user);
  if (user.scalar_type() == at::kBool) {
    target.copy_(data.view(at::kBool).view(target.sizes()));
  } else {
    target.copy_(data.view(target.sizes()));
  }
}

ternDataType_t ternTypeOf(at::ScalarType type, const char* collective) {
  switch (type) {
    case at::kFloat:
    case at::kComplexFloat:
      return ternFloat32;
    case at::kDouble:
    case at::kComplexDouble:
      return ternFloat64;
    case at::kHalf:
    case at::kComplexHalf:
      return ternFloat16;
    case at::kBFloat16:
      return ternBfloat16;
    case at::kChar:
      return ternInt8;
    case at::kByte:
    case at::kBool:
      return ternUint8;
    case at::kInt:
      return ternInt32;
    case at::kLong:
      return ternInt64;
    case at::kUInt32:
      return ternUint32;
    case at::kUInt64:
      return ternUint64;
    default:
      TORCH_CHECK(false, "tern ", collective, ": tensors of dtype ", c10::toString(type),
                  " are not supported (tern carries float32/64/16, bfloat16, int8/uint8/int32/int64, uint32/uint64, "
                  "bool and complex)");
  }
}

Buffer asBuffer(const at::Tensor& t, const char* collective) {
  TORCH_CHECK(t.defined(), "tern ", collective, ": undefined tensor");
  TORCH_CHECK(t.device().is_cpu() || t.device().is_cuda(), "tern ", collective,
              ": the tern backend takes CPU and CUDA tensors, got a tensor on ", t.device().str());
  TORCH_CHECK(t.layout() == at::kStrided, "tern ", collective, ": sparse tensors are not supported");
  Buffer b;
  b.user = t;
  b.dtype = ternTypeOf(t.scalar_type(), collective);
  at::Tensor v = t;
  if (v.is_complex()) v = at::view_as_real(v.is_contiguous() ? v : v.contiguous());
  if (v.scalar_type() == at::kBool) v = (v.is_contiguous() ? v : v.contiguous()).view(at::kByte);
  b.data = v.is_contiguous() ? v : v.contiguous();
  b.count = static_cast<size_t>(b.data.numel());
  return b;
}

at::Tensor flatLike(const at::Tensor& t, int64_t elements) { return at::empty({elements}, t.options()); }

const at::Tensor& singleTensor(const std::vector<at::Tensor>& tensors, const char* collective) {
  TORCH_CHECK(tensors.size() == 1, "tern ", collective, ": expects exactly one tensor per process, got ",
              tensors.size());
  return tensors[0];
}

void checkSameShape(const std::vector<at::Tensor>& tensors, const at::Tensor& like, const char* collective,
                    const char* what) {
  for (size_t i = 0; i < tensors.size(); ++i) {
    TORCH_CHECK(tensors[i].scalar_type() == like.scalar_type(), "tern ", collective, ": ", what, " ", i, " has dtype ",
                c10::toString(tensors[i].scalar_type()), " but the input has ", c10::toString(like.scalar_type()));
    TORCH_CHECK(tensors[i].numel() == like.numel(), "tern ", collective, ": ", what, " ", i, " has ",
                tensors[i].numel(), " elements but the input has ", like.numel());
  }
}

void Reduction::premultiply(at::Tensor& data) const {
  if (premulTensor.defined()) {
    data.mul_(premulTensor.to(data.device()));
  } else if (premulFactor) {
    data.mul_(*premulFactor);
  }
}

Reduction reductionOf(const c10d::ReduceOp& op, at::ScalarType type, const char* collective) {
  const bool isBool = type == at::kBool;
  const bool isComplex = at::isComplexType(type);
  Reduction r;
  switch (op.op_) {
    case c10d::ReduceOp::SUM:
      r.op = isBool ? ternMax : ternSum;  // a sum of booleans is their logical or, as in Gloo
      break;
    case c10d::ReduceOp::AVG:
      TORCH_CHECK(!isBool, "tern ", collective, ": ReduceOp.AVG is not defined on bool tensors");
      r.op = ternAvg;
      break;
    case c10d::ReduceOp::PRODUCT:
      TORCH_CHECK(!isComplex, "tern ", collective, ": ReduceOp.PRODUCT is not supported on complex tensors");
      r.op = isBool ? ternMin : ternProd;  // logical and
      break;
    case c10d::ReduceOp::MIN:
      TORCH_CHECK(!isComplex, "tern ", collective, ": ReduceOp.MIN is not defined on complex tensors");
      r.op = ternMin;
      break;
    case c10d::ReduceOp::MAX:
      TORCH_CHECK(!isComplex, "tern ", collective, ": ReduceOp.MAX is not defined on complex tensors");
      r.op = ternMax;
      break;
    case c10d::ReduceOp::PREMUL_SUM: {
      TORCH_CHECK(at::isFloatingType(type) || isComplex, "tern ", collective,
                  ": ReduceOp.PREMUL_SUM needs a floating-point tensor, got ", c10::toString(type));
      auto* s = dynamic_cast<c10d::PreMulSumSupplement*>(op.supplement_.get());
      TORCH_CHECK(s != nullptr, "tern ", collective, ": PREMUL_SUM without a factor");
      if (s->tensor_factor.defined()) {
        r.premulTensor = s->tensor_factor;
      } else {
        r.premulFactor = s->double_factor;
      }
      r.op = ternSum;
      break;
    }
    case c10d::ReduceOp::BAND:
    case c10d::ReduceOp::BOR:
    case c10d::ReduceOp::BXOR:
      TORCH_CHECK(false, "tern ", collective,
                  ": bitwise reductions (BAND, BOR, BXOR) are not supported: tern reduces with sum, product, "
                  "min, max and avg");
    default:
      TORCH_CHECK(false, "tern ", collective, ": unknown ReduceOp ", static_cast<int>(op.op_));
  }
  return r;
}

}  // namespace tern::torch_backend
