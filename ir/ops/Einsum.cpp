// Linear-algebra ops of the Vision family: Einsum (general Einstein summation) and Det
// (batched determinant). Registered by registerVisionOps (ir/ops/Vision.cpp).
#include "ir/ops/OpUtil.h"
#include "ir/ops/Vision.h"

#include <fmt/ranges.h>

namespace triad::ir {
using namespace ops;

namespace {

// ---------------------------------------------------------------------------------------------
// Einsum
//
// The equation is parsed once, against the input ranks, into label ids (see EinsumAttrs). The
// kernel then runs one generic loop over the index space of all labels, ordered output labels
// first and summed labels last, so every output element is the sum over a contiguous run of
// the loop: out[o] = sum_s prod_i in_i[offset_i(o, s)].

constexpr int64_t kNumLetters = 52;
constexpr int64_t kEllipsisBase = kNumLetters;

int64_t letterId(char c) {
  return c >= 'a' ? 26 + (c - 'a') : c - 'A';
}

/// One term of the equation: its letters and where its "..." sits (-1: none), as positions
/// in the term's label list.
struct EinsumTerm {
  std::vector<int64_t> letters;
  int64_t ellipsisAt = -1;
};

EinsumTerm parseTerm(const std::string& eq, const std::string& term) {
  EinsumTerm t;
  for (size_t i = 0; i < term.size(); ++i) {
    char c = term[i];
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
      t.letters.push_back(letterId(c));
    } else if (c == '.' && term.compare(i, 3, "...") == 0 && t.ellipsisAt < 0) {
      t.ellipsisAt = int64_t(t.letters.size());
      i += 2;
    } else {
      invalid("attribute 'equation' \"{}\": unexpected '{}' in term \"{}\" (subscripts are "
              "letters, with at most one '...' per term)",
              eq, c, term);
    }
  }
  return t;
}

std::vector<std::string> splitTerms(const std::string& s) {
  std::vector<std::string> out(1);
  for (char c : s) {
    if (c == ',')
      out.emplace_back();
    else
      out.back() += c;
  }
  return out;
}

std::shared_ptr<const Attrs> parseEinsum(const ParseContext& ctx) {
  auto a = std::make_shared<EinsumAttrs>();
  auto raw = ctx.attrs.getString("equation");
  if (!raw) invalid("attribute 'equation' is required");
  for (char c : *raw)
    if (!std::isspace(static_cast<unsigned char>(c))) a->equation += c;
  const std::string& eq = a->equation;

  size_t arrow = eq.find("->");
  if (arrow != std::string::npos && eq.find("->", arrow + 2) != std::string::npos)
    invalid("attribute 'equation' \"{}\" has more than one '->'", eq);
  std::vector<std::string> lhs = splitTerms(eq.substr(0, arrow));
  if (lhs.size() != ctx.inputTypes.size())
    invalid("attribute 'equation' \"{}\" has {} input terms but the node has {} inputs", eq,
            lhs.size(), ctx.inputTypes.size());

  // Resolve each input term against its rank; the ellipsis dims of all inputs right-align
  // into one broadcast group of rank maxEll.
  std::vector<EinsumTerm> terms;
  std::vector<int64_t> ellRanks;
  int64_t maxEll = 0;
  for (size_t i = 0; i < lhs.size(); ++i) {
    if (!ctx.inputTypes[i]) invalid("input {} is required", i);
    terms.push_back(parseTerm(eq, lhs[i]));
    int64_t rank = ctx.inputTypes[i]->rank();
    int64_t ell = rank - int64_t(terms.back().letters.size());
    if (ell < 0 || (ell > 0 && terms.back().ellipsisAt < 0))
      invalid("attribute 'equation' \"{}\": term \"{}\" does not match input {} of rank {}", eq,
              lhs[i], i, rank);
    ellRanks.push_back(ell);
    a->inputRanks.push_back(rank);
    maxEll = std::max(maxEll, ell);
  }
  for (size_t i = 0; i < terms.size(); ++i) {
    const EinsumTerm& t = terms[i];
    for (int64_t p = 0; p <= int64_t(t.letters.size()); ++p) {
      if (p == t.ellipsisAt)
        for (int64_t j = 0; j < ellRanks[i]; ++j)
          a->inputLabels.push_back(kEllipsisBase + (maxEll - ellRanks[i]) + j);
      if (p < int64_t(t.letters.size())) a->inputLabels.push_back(t.letters[size_t(p)]);
    }
  }

  std::vector<int64_t> letterCount(size_t(kNumLetters), 0);
  for (const EinsumTerm& t : terms)
    for (int64_t l : t.letters)
      ++letterCount[size_t(l)];
  if (arrow == std::string::npos) {
    // Implicit output: the ellipsis dims, then the letters used exactly once in ASCII order.
    for (int64_t j = 0; j < maxEll; ++j)
      a->outputLabels.push_back(kEllipsisBase + j);
    for (int64_t l = 0; l < kNumLetters; ++l)
      if (letterCount[size_t(l)] == 1) a->outputLabels.push_back(l);
  } else {
    std::string rhs = eq.substr(arrow + 2);
    EinsumTerm out = parseTerm(eq, rhs);
    if (maxEll > 0 && out.ellipsisAt < 0)
      invalid("attribute 'equation' \"{}\": the inputs have '...' dims but the output does not",
              eq);
    for (int64_t p = 0; p <= int64_t(out.letters.size()); ++p) {
      if (p == out.ellipsisAt)
        for (int64_t j = 0; j < maxEll; ++j)
          a->outputLabels.push_back(kEllipsisBase + j);
      if (p == int64_t(out.letters.size())) break;
      int64_t l = out.letters[size_t(p)];
      if (letterCount[size_t(l)] == 0)
        invalid("attribute 'equation' \"{}\": output subscript '{}' is not in any input", eq,
                rhs[size_t(p)]);
      if (std::count(out.letters.begin(), out.letters.end(), l) > 1)
        invalid("attribute 'equation' \"{}\": output subscript repeated", eq);
      a->outputLabels.push_back(l);
    }
  }
  return a;
}

} // namespace

namespace ops {

/// Size of every label id (-1: unused) given the input shapes; dims of size 1 broadcast across
/// inputs, a label repeated within one input needs equal dims.
std::vector<int64_t> einsumLabelSizes(const EinsumAttrs& a, const std::vector<Shape>& shapes) {
  int64_t maxId = kEllipsisBase;
  for (int64_t l : a.inputLabels)
    maxId = std::max(maxId, l + 1);
  std::vector<int64_t> size(size_t(maxId), -1);
  size_t k = 0;
  for (size_t i = 0; i < shapes.size(); ++i) {
    std::vector<int64_t> local(size_t(maxId), -1);
    for (int64_t d : shapes[i]) {
      size_t l = size_t(a.inputLabels[k++]);
      if (local[l] >= 0 && local[l] != d)
        invalid("equation \"{}\": input {} {} repeats a subscript over dims of different sizes",
                a.equation, i, shapeToString(shapes[i]));
      local[l] = d;
      if (size[l] < 0 || size[l] == 1)
        size[l] = d;
      else if (d != 1 && d != size[l])
        invalid("equation \"{}\": input {} {} has a dim of size {} where other inputs have {}",
                a.equation, i, shapeToString(shapes[i]), d, size[l]);
    }
  }
  return size;
}

EinsumLoops einsumLoops(const EinsumAttrs& a, const std::vector<Shape>& shapes) {
  std::vector<int64_t> size = einsumLabelSizes(a, shapes);
  EinsumLoops p;
  p.labels = a.outputLabels;
  for (int64_t l = 0; l < int64_t(size.size()); ++l)
    if (size[size_t(l)] >= 0 && std::find(p.labels.begin(), p.labels.end(), l) == p.labels.end())
      p.labels.push_back(l);
  for (int64_t l : p.labels)
    p.extent.push_back(size[size_t(l)]);
  p.stride.assign(shapes.size(), std::vector<int64_t>(p.labels.size(), 0));
  size_t k = 0;
  for (size_t i = 0; i < shapes.size(); ++i) {
    std::vector<int64_t> st = stridesOf(shapes[i]);
    for (size_t d = 0; d < shapes[i].size(); ++d, ++k) {
      if (shapes[i][d] == 1) continue;
      auto at = std::find(p.labels.begin(), p.labels.end(), a.inputLabels[k]);
      p.stride[i][size_t(at - p.labels.begin())] += st[d];
    }
  }
  return p;
}

} // namespace ops

namespace {

std::vector<TensorType> inferEinsum(const InferContext& ctx) {
  const auto& a = ctx.as<EinsumAttrs>();
  if (ctx.inputs.size() != a.inputRanks.size())
    invalid("equation \"{}\" needs {} inputs, the node has {}", a.equation, a.inputRanks.size(),
            ctx.inputs.size());
  std::vector<Shape> shapes;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    const TensorType& t = ctx.in(i);
    requireSameDType(ctx.in(0), t, "Einsum inputs");
    if (t.rank() != a.inputRanks[i])
      invalid("input {} {} does not have the rank {} the equation was parsed for", i,
              shapeToString(t.shape), a.inputRanks[i]);
    shapes.push_back(t.shape);
  }
  DType dt = ctx.in(0).dtype;
  if (dt == DType::Bool || dt == DType::Fixed)
    unsupported("Einsum on {} is not supported", dtypeName(dt));
  std::vector<int64_t> size = einsumLabelSizes(a, shapes);
  Shape out;
  for (int64_t l : a.outputLabels)
    out.push_back(size[size_t(l)]);
  return {TensorType{dt, out, {}}};
}

template <typename T> void einsumKernel(const EvalContext& ctx) {
  const auto& a = ctx.as<EinsumAttrs>();
  size_t nIn = a.inputRanks.size();
  std::vector<Shape> shapes;
  for (size_t i = 0; i < nIn; ++i)
    shapes.push_back(ctx.in(i).shape());
  EinsumLoops plan = einsumLoops(a, shapes);
  size_t nLoop = plan.labels.size();
  const Shape& loopShape = plan.extent;
  const auto& stride = plan.stride;
  int64_t total = numElements(loopShape);
  int64_t outCount = ctx.out(0).numElements();
  if (total == 0 || outCount == 0) return; // output is zero-initialised

  std::vector<const T*> in(nIn);
  for (size_t i = 0; i < nIn; ++i)
    in[i] = ctx.in(i).data<T>();
  T* y = ctx.out(0).data<T>();
  using Acc = std::conditional_t<
      std::is_same_v<T, float> || std::is_same_v<T, Half> || std::is_same_v<T, double>, double, T>;
  int64_t sumCount = total / outCount; // loop steps per output element
  std::vector<int64_t> idx(nLoop, 0), off(nIn, 0);
  for (int64_t o = 0; o < outCount; ++o) {
    Acc acc = 0;
    for (int64_t s = 0; s < sumCount; ++s) {
      Acc prod = 1;
      for (size_t i = 0; i < nIn; ++i)
        prod = Acc(prod * Acc(in[i][off[i]]));
      acc = Acc(acc + prod);
      // Advance the odometer over all loop dims, updating every input offset.
      for (size_t d = nLoop; d-- > 0;) {
        for (size_t i = 0; i < nIn; ++i)
          off[i] += stride[i][d];
        if (++idx[d] < loopShape[d]) break;
        for (size_t i = 0; i < nIn; ++i)
          off[i] -= stride[i][d] * idx[d];
        idx[d] = 0;
      }
    }
    y[o] = T(acc);
  }
}

void evalEinsum(const EvalContext& ctx) {
  visitDType(ctx.out(0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>)
      TRIAD_ASSERT(false, "Einsum on bool");
    else
      einsumKernel<T>(ctx);
  });
}

int64_t macsEinsum(const InferContext& ctx, std::span<const TensorType>) {
  const auto& a = ctx.as<EinsumAttrs>();
  std::vector<Shape> shapes;
  for (size_t i = 0; i < ctx.inputs.size(); ++i)
    shapes.push_back(ctx.in(i).shape);
  int64_t n = 1;
  for (int64_t s : einsumLabelSizes(a, shapes))
    if (s >= 0) n *= s;
  return ctx.inputs.size() > 1 ? n : 0;
}

// ---------------------------------------------------------------------------------------------
// Det: X [..., M, M] -> Y [...], by LU decomposition with partial pivoting in double.

std::vector<TensorType> inferDet(const InferContext& ctx) {
  const TensorType& X = ctx.in(0);
  requireFloat(X, "input X");
  requireRankAtLeast(X, 2, "input X");
  if (X.shape[size_t(X.rank() - 1)] != X.shape[size_t(X.rank() - 2)])
    invalid("input X {} must hold square matrices in its last two dims", shapeToString(X.shape));
  return {TensorType{X.dtype, Shape(X.shape.begin(), X.shape.end() - 2), {}}};
}

double determinant(std::vector<double>& m, int64_t M) {
  double det = 1;
  for (int64_t c = 0; c < M; ++c) {
    int64_t piv = c;
    for (int64_t r = c + 1; r < M; ++r)
      if (std::abs(m[size_t(r * M + c)]) > std::abs(m[size_t(piv * M + c)])) piv = r;
    if (m[size_t(piv * M + c)] == 0) return 0;
    if (piv != c) {
      for (int64_t j = 0; j < M; ++j)
        std::swap(m[size_t(c * M + j)], m[size_t(piv * M + j)]);
      det = -det;
    }
    double p = m[size_t(c * M + c)];
    det *= p;
    for (int64_t r = c + 1; r < M; ++r) {
      double f = m[size_t(r * M + c)] / p;
      for (int64_t j = c + 1; j < M; ++j)
        m[size_t(r * M + j)] -= f * m[size_t(c * M + j)];
    }
  }
  return det;
}

void evalDet(const EvalContext& ctx) {
  const Tensor& X = ctx.in(0);
  int64_t M = X.shape().back();
  int64_t batch = ctx.out(0).numElements();
  visitFloat(X.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* x = X.data<T>();
    T* y = ctx.out(0).data<T>();
    std::vector<double> m(size_t(M * M));
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t i = 0; i < M * M; ++i)
        m[size_t(i)] = double(x[b * M * M + i]);
      y[b] = T(determinant(m, M));
    }
  });
}

} // namespace

void registerLinearAlgebraOps(OpTable& table) {
  table.add({.kind = OpKind::Einsum,
             .minInputs = 1,
             .maxInputs = -1,
             .sinceOpset = 12,
             .parse = parseEinsum,
             .infer = inferEinsum,
             .eval = evalEinsum,
             .macs = macsEinsum});
  table.add({.kind = OpKind::Det, .sinceOpset = 11, .infer = inferDet, .eval = evalDet});
}

} // namespace triad::ir
