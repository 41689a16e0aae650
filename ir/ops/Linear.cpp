// Dense products: Gemm and MatMul.
#include "ir/ops/Linear.h"
#include "ir/ops/OpUtil.h"

namespace triad::ir {
using namespace ops;

namespace {

template <typename T>
using AccOf = std::conditional_t<std::is_floating_point_v<T> || std::is_same_v<T, Half>, double, T>;

// acc[M x N] = A[M x K] * B[K x N] for operands addressed by (row, column) strides, so that
// transposed operands need no copy. Accumulates in double for float types (one rounding at the
// end), in the integer type itself otherwise. The k-outer order keeps the inner loop contiguous
// over B's rows and acc, which is what makes the reference fast enough for BERT-sized models.
template <typename T>
void matrixProduct(const T* a, int64_t aRow, int64_t aCol, const T* b, int64_t bRow, int64_t bCol,
                   int64_t M, int64_t K, int64_t N, AccOf<T>* acc) {
  using Acc = AccOf<T>;
  std::fill(acc, acc + M * N, Acc(0));
  for (int64_t m = 0; m < M; ++m) {
    Acc* row = acc + m * N;
    for (int64_t k = 0; k < K; ++k) {
      Acc av = Acc(a[m * aRow + k * aCol]);
      const T* bk = b + k * bRow;
      for (int64_t n = 0; n < N; ++n)
        row[n] += av * Acc(bk[n * bCol]);
    }
  }
}

// Y = alpha * op(A) * op(B) + beta * C, op = optional transpose, C unidirectionally broadcast.
std::shared_ptr<const Attrs> parseGemm(const ParseContext& ctx) {
  auto a = std::make_shared<GemmAttrs>();
  a->alpha = ctx.attrs.getFloat("alpha", 1.0f);
  a->beta = ctx.attrs.getFloat("beta", 1.0f);
  a->transA = ctx.attrs.getInt("transA", 0) != 0;
  a->transB = ctx.attrs.getInt("transB", 0) != 0;
  return a;
}

std::vector<TensorType> inferGemm(const InferContext& ctx) {
  const auto& a = ctx.as<GemmAttrs>();
  const TensorType& A = ctx.in(0);
  const TensorType& B = ctx.in(1);
  requireRank(A, 2, "input A");
  requireRank(B, 2, "input B");
  requireSameDType(A, B, "inputs A and B");
  if (!isFloat(A.dtype) && !dtypeIn(A.dtype, {DType::I32, DType::I64, DType::U32, DType::U64}))
    unsupported("Gemm on {} is not supported", dtypeName(A.dtype));
  int64_t M = a.transA ? A.shape[1] : A.shape[0];
  int64_t K = a.transA ? A.shape[0] : A.shape[1];
  int64_t Kb = a.transB ? B.shape[1] : B.shape[0];
  int64_t N = a.transB ? B.shape[0] : B.shape[1];
  if (K != Kb)
    invalid("inner dimensions differ: A{} (transA={}) and B{} (transB={})", shapeToString(A.shape),
            a.transA, shapeToString(B.shape), a.transB);
  Shape out{M, N};
  if (ctx.has(2)) {
    requireSameDType(A, ctx.in(2), "inputs A and C");
    if (broadcastShapes(ctx.in(2).shape, out) != out)
      invalid("bias C{} does not broadcast to the output {}", shapeToString(ctx.in(2).shape),
              shapeToString(out));
  }
  return {TensorType{A.dtype, out, {}}};
}

template <typename T> void gemmKernel(const EvalContext& ctx) {
  const auto& a = ctx.as<GemmAttrs>();
  const Tensor& A = ctx.in(0);
  const Tensor& B = ctx.in(1);
  Tensor& Y = ctx.out(0);
  int64_t M = Y.shape()[0], N = Y.shape()[1];
  int64_t K = a.transA ? A.shape()[0] : A.shape()[1];
  const T* pa = A.data<T>();
  const T* pb = B.data<T>();
  T* py = Y.data<T>();
  using Acc = AccOf<T>;
  std::vector<int64_t> cmap;
  if (ctx.has(2)) cmap = broadcastIndexMap(ctx.in(2).shape(), Y.shape());
  std::vector<Acc> acc(size_t(M * N));
  // op(A)[m,k] = A[k,m] when transposed: swap the strides instead of copying.
  matrixProduct<T>(pa, a.transA ? 1 : K, a.transA ? M : 1, pb, a.transB ? 1 : N, a.transB ? K : 1,
                   M, K, N, acc.data());
  for (int64_t i = 0; i < M * N; ++i) {
    Acc y = Acc(a.alpha) * acc[size_t(i)];
    if (ctx.has(2) && a.beta != 0.0f) y += Acc(a.beta) * Acc(ctx.in(2).data<T>()[cmap[size_t(i)]]);
    py[i] = T(y);
  }
}

void evalGemm(const EvalContext& ctx) {
  visitDType(ctx.in(0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>)
      TRIAD_ASSERT(false, "Gemm on bool");
    else
      gemmKernel<T>(ctx);
  });
}

} // namespace

MatMulShapes ops::matmulShapes(const Shape& a, const Shape& b) {
  if (a.empty() || b.empty()) invalid("MatMul operands must have rank >= 1");
  Shape A = a.size() == 1 ? Shape{1, a[0]} : a;
  Shape B = b.size() == 1 ? Shape{b[0], 1} : b;
  MatMulShapes s;
  s.M = A[A.size() - 2];
  s.K = A[A.size() - 1];
  s.N = B[B.size() - 1];
  if (B[B.size() - 2] != s.K)
    invalid("inner dimensions differ: {} x {}", shapeToString(a), shapeToString(b));
  s.aBatch.assign(A.begin(), A.end() - 2);
  s.bBatch.assign(B.begin(), B.end() - 2);
  s.batch = broadcastShapes(s.aBatch, s.bBatch);
  s.out = s.batch;
  if (a.size() > 1) s.out.push_back(s.M);
  if (b.size() > 1) s.out.push_back(s.N);
  return s;
}

namespace {

std::vector<TensorType> inferMatMul(const InferContext& ctx) {
  const TensorType& A = ctx.in(0);
  const TensorType& B = ctx.in(1);
  requireSameDType(A, B, "inputs A and B");
  if (A.dtype == DType::Bool || A.dtype == DType::Fixed)
    unsupported("MatMul on {} is not supported", dtypeName(A.dtype));
  return {TensorType{A.dtype, matmulShapes(A.shape, B.shape).out, {}}};
}

void evalMatMul(const EvalContext& ctx) {
  const Tensor& A = ctx.in(0);
  const Tensor& B = ctx.in(1);
  Tensor& Y = ctx.out(0);
  MatMulShapes s = matmulShapes(A.shape(), B.shape());
  std::vector<int64_t> amap = broadcastIndexMap(s.aBatch, s.batch);
  std::vector<int64_t> bmap = broadcastIndexMap(s.bBatch, s.batch);
  int64_t nb = numElements(s.batch);
  visitDType(A.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      TRIAD_ASSERT(false, "MatMul on bool");
    } else {
      const T* pa = A.data<T>();
      const T* pb = B.data<T>();
      T* py = Y.data<T>();
      std::vector<AccOf<T>> acc(size_t(s.M * s.N));
      for (int64_t b = 0; b < nb; ++b) {
        const T* a0 = pa + amap[size_t(b)] * s.M * s.K;
        const T* b0 = pb + bmap[size_t(b)] * s.K * s.N;
        matrixProduct<T>(a0, s.K, 1, b0, s.N, 1, s.M, s.K, s.N, acc.data());
        T* y0 = py + b * s.M * s.N;
        for (int64_t i = 0; i < s.M * s.N; ++i)
          y0[i] = T(acc[size_t(i)]);
      }
    }
  });
}

int64_t macsGemm(const InferContext& ctx, std::span<const TensorType> outs) {
  const auto& a = ctx.as<GemmAttrs>();
  int64_t K = a.transA ? ctx.in(0).shape[0] : ctx.in(0).shape[1];
  return outs[0].numElements() * K;
}

int64_t macsMatMul(const InferContext& ctx, std::span<const TensorType> outs) {
  const Shape& a = ctx.in(0).shape;
  return outs[0].numElements() * a.back();
}

} // namespace

void registerLinearOps(OpTable& table) {
  table.add({.kind = OpKind::Gemm,
             .minInputs = 2,
             .maxInputs = 3,
             .parse = parseGemm,
             .infer = inferGemm,
             .eval = evalGemm,
             .macs = macsGemm});
  table.add({.kind = OpKind::MatMul,
             .minInputs = 2,
             .maxInputs = 2,
             .infer = inferMatMul,
             .eval = evalMatMul,
             .macs = macsMatMul});
}

} // namespace triad::ir
