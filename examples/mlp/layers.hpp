// The MLP's arithmetic in plain C++: fully connected layers (row-major W of in x out, so y = x W + b), ReLU and
// softmax cross-entropy. Inputs may be sparse (mostly zeros, like bag-of-features data): the loops skip zero
// inputs, so a wide first layer costs what its non-zeros cost while its gradient is still a dense tensor that
// data parallelism has to all-reduce -- the shape of embedding-heavy models, where communication dominates.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace mlp {

// y[b x out] = x[b x in] W + bias.
void linearForward(const float* x, size_t batch, size_t in, size_t out, const float* w, const float* bias, float* y);
// dW = x^T dy, dbias = column sums of dy (both overwritten); dx = dy W^T when dx is not null.
void linearBackward(const float* x, const float* dy, size_t batch, size_t in, size_t out, const float* w, float* dw,
                    float* dbias, float* dx);
void reluForward(float* y, size_t n);
// dy *= (y > 0), y being the ReLU output.
void reluBackward(const float* y, float* dy, size_t n);
// Mean cross-entropy over the batch; dlogits (may be null) receives its gradient. correct counts argmax hits.
double softmaxCrossEntropy(const float* logits, const int32_t* labels, size_t batch, size_t classes, float* dlogits,
                           size_t* correct);

// Deterministic initialisation (uniform in +-sqrt(6 / (in + out)), Glorot), identical on every rank for a seed.
std::vector<float> glorot(size_t in, size_t out, uint64_t seed);

}  // namespace mlp
