#include "tests/fuzz/OnnxMutator.h"
#include "tests/fuzz/Payloads.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <onnx/onnx_pb.h>
#include <random>
#include <string>
#include <vector>

namespace triad::fuzz {

namespace {

namespace pb = google::protobuf;

// Op types to swap in: Triad's (ir/Ops.def) and a few it does not know (control flow, RNNs,
// ai.onnx.ml), so that both the op parsers and the unknown-op path are reached.
constexpr std::array kOpTypes = {
    "Add", "Sub", "Mul", "Div", "Pow", "Mod", "Min", "Max", "Sum", "Mean", "Equal", "Less",
    "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or", "Xor", "Not", "BitShift", "BitwiseAnd",
    "BitwiseOr", "BitwiseXor", "BitwiseNot", "Where", "Sqrt", "Exp", "Log", "Neg", "Abs",
    "Reciprocal", "Floor", "Ceil", "Round", "Sign", "Erf", "Sin", "Cos", "Tan", "Asin", "Acos",
    "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "IsNaN", "IsInf", "Cast", "CastLike", "Relu",
    "LeakyRelu", "PRelu", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "Clip", "Gelu", "Elu",
    "Selu", "Celu", "Softplus", "Softsign", "ThresholdedRelu", "Mish", "Shrink", "Gemm", "MatMul",
    "Conv", "ConvTranspose", "MaxPool", "AveragePool", "LpPool", "GlobalAveragePool",
    "GlobalMaxPool", "BatchNormalization", "InstanceNormalization", "LayerNormalization", "LRN",
    "Softmax", "LogSoftmax", "Hardmax", "ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin",
    "ReduceProd", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare", "ArgMax", "ArgMin",
    "CumSum", "Identity", "Dropout", "Constant", "Reshape", "Flatten", "Transpose", "Squeeze",
    "Unsqueeze", "Concat", "Split", "Slice", "Gather", "GatherElements", "GatherND", "Expand",
    "Tile", "Pad", "Shape", "Size", "ConstantOfShape", "Range", "DepthToSpace", "SpaceToDepth",
    "Trilu", "OneHot", "EyeLike", "Resize", "Upsample", "NegativeLogLikelihoodLoss",
    "SoftmaxCrossEntropyLoss", "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear",
    "QLinearMatMul", "QLinearConv", "MatMulInteger", "ConvInteger", "ScatterElements", "ScatterND",
    "Scatter", "Compress", "TopK", "ReverseSequence", "MaxUnpool", "HannWindow", "HammingWindow",
    "BlackmanWindow", "DFT", "STFT", "MelWeightMatrix", "GridSample", "RoiAlign", "CenterCropPad",
    "GroupNormalization", "MeanVarianceNormalization", "Einsum", "Det",
    // Not Triad's: refused by name, but libonnx's checks and shape inference see them.
    "If", "Loop", "Scan", "LSTM", "GRU", "RNN", "NonZero", "Unique", "SequenceConstruct",
    "Optional", "RandomNormal", "Bernoulli", "StringNormalizer", "LabelEncoder"};

constexpr std::array kAttrNames = {"axis",
                                   "axes",
                                   "keepdims",
                                   "noop_with_empty_axes",
                                   "strides",
                                   "pads",
                                   "kernel_shape",
                                   "dilations",
                                   "group",
                                   "auto_pad",
                                   "ceil_mode",
                                   "count_include_pad",
                                   "storage_order",
                                   "perm",
                                   "to",
                                   "alpha",
                                   "beta",
                                   "gamma",
                                   "epsilon",
                                   "momentum",
                                   "transA",
                                   "transB",
                                   "mode",
                                   "value",
                                   "value_float",
                                   "value_floats",
                                   "value_int",
                                   "value_ints",
                                   "value_string",
                                   "sparse_value",
                                   "split",
                                   "num_outputs",
                                   "starts",
                                   "ends",
                                   "blocksize",
                                   "k",
                                   "largest",
                                   "sorted",
                                   "exclusive",
                                   "reverse",
                                   "upper",
                                   "dtype",
                                   "seed",
                                   "p",
                                   "lambd",
                                   "bias",
                                   "size",
                                   "allowzero",
                                   "batch_dims",
                                   "reduction",
                                   "coordinate_transformation_mode",
                                   "cubic_coeff_a",
                                   "exclude_outside",
                                   "extrapolation_value",
                                   "nearest_mode",
                                   "antialias",
                                   "keep_aspect_ratio_policy",
                                   "output_padding",
                                   "output_shape",
                                   "ratio",
                                   "training_mode",
                                   "equation",
                                   "fmod",
                                   "direction",
                                   "time_axis",
                                   "batch_axis",
                                   "onesided",
                                   "inverse",
                                   "periodic",
                                   "output_datatype",
                                   "spatial",
                                   "across_channels",
                                   "normalize_variance",
                                   "num_groups",
                                   "stash_type",
                                   "select_last_index",
                                   "detect_negative",
                                   "detect_positive",
                                   "align_corners",
                                   "padding_mode",
                                   "sampling_ratio",
                                   "spatial_scale",
                                   "output_height",
                                   "output_width",
                                   "scales",
                                   "body",
                                   "then_branch",
                                   "else_branch",
                                   "saturate",
                                   "block_size",
                                   "axis_w",
                                   "ignore_index",
                                   "center_point_box"};

constexpr std::array kStrings = {"NOTSET",
                                 "SAME_UPPER",
                                 "SAME_LOWER",
                                 "VALID",
                                 "nearest",
                                 "linear",
                                 "cubic",
                                 "bilinear",
                                 "bicubic",
                                 "constant",
                                 "reflect",
                                 "edge",
                                 "wrap",
                                 "half_pixel",
                                 "asymmetric",
                                 "align_corners",
                                 "pytorch_half_pixel",
                                 "tf_crop_and_resize",
                                 "half_pixel_symmetric",
                                 "round_prefer_floor",
                                 "round_prefer_ceil",
                                 "floor",
                                 "ceil",
                                 "tanh",
                                 "none",
                                 "mean",
                                 "sum",
                                 "max",
                                 "min",
                                 "DCR",
                                 "CRD",
                                 "zeros",
                                 "border",
                                 "reflection",
                                 "avg",
                                 "not_larger",
                                 "not_smaller",
                                 "stretch",
                                 "LEFT",
                                 "RIGHT",
                                 "forward",
                                 "reverse",
                                 "bidirectional",
                                 "ij,jk->ik",
                                 "...ii->...i",
                                 "i,i",
                                 "abc,cd->abd",
                                 "->",
                                 "ii",
                                 "",
                                 "\xff\xfe",
                                 "NaN"};

constexpr std::array<const char*, 6> kDomains = {
    "", "ai.onnx", "com.microsoft", "ai.onnx.ml", "local", "ai.onnx.preview.training"};

// External-data entries: relative, missing, escaping, absolute, a folder, odd characters.
constexpr std::array kLocations = {"weights.bin",
                                   "missing.bin",
                                   "subdir",
                                   "./weights.bin",
                                   "subdir/../weights.bin",
                                   "../weights.bin",
                                   "/etc/passwd",
                                   "/dev/zero",
                                   ".",
                                   "",
                                   "weights.bin/",
                                   "w\xffights.bin",
                                   "weights.bin\n"};
constexpr std::array kNumbers = {"0",
                                 "1",
                                 "4",
                                 "16",
                                 "4095",
                                 "4096",
                                 "4097",
                                 "-1",
                                 "-4096",
                                 "9223372036854775807",
                                 "9223372036854775808",
                                 "-9223372036854775808",
                                 "99999999999999999999999",
                                 "abc",
                                 "",
                                 "1e3",
                                 "0x10",
                                 " 8",
                                 "8 ",
                                 "+8",
                                 "16abc",
                                 "4611686018427387904"};

class Mutator {
public:
  Mutator(onnx::ModelProto& m, unsigned seed) : m_(m), rng_(seed) {}

  // Applies one mutation (a few, now and then); returns false when nothing applied.
  bool run() {
    int rounds = chance(8) ? 2 + int(below(3)) : 1;
    bool any = false;
    for (int r = 0; r < rounds; ++r)
      for (int attempt = 0; attempt < 8; ++attempt) {
        collect();
        if (mutateOnce()) {
          any = true;
          break;
        }
      }
    return any;
  }

private:
  // ---- random helpers ----
  uint64_t below(uint64_t n) {
    return n == 0 ? 0 : std::uniform_int_distribution<uint64_t>(0, n - 1)(rng_);
  }
  bool chance(unsigned oneIn) { return below(oneIn) == 0; }
  template <typename C> auto& pick(C& c) { return c[below(c.size())]; }
  template <typename C> const auto& pickConst(const C& c) { return c[below(c.size())]; }

  int64_t interestingInt(int64_t old) {
    static constexpr std::array<int64_t, 22> kInts = {0,
                                                      1,
                                                      -1,
                                                      2,
                                                      -2,
                                                      3,
                                                      4,
                                                      7,
                                                      8,
                                                      16,
                                                      255,
                                                      256,
                                                      65536,
                                                      int64_t(1) << 31,
                                                      (int64_t(1) << 31) - 1,
                                                      -(int64_t(1) << 31),
                                                      int64_t(1) << 32,
                                                      int64_t(1) << 40,
                                                      int64_t(1) << 62,
                                                      std::numeric_limits<int64_t>::max(),
                                                      std::numeric_limits<int64_t>::min(),
                                                      -1000};
    // Arithmetic on the old value wraps (in uint64_t: signed overflow is undefined).
    auto u = uint64_t(old);
    switch (below(6)) {
    case 0:
      return int64_t(chance(2) ? u + 1 : u - 1);
    case 1:
      return int64_t(0 - u);
    case 2:
      return int64_t(below(9)) - 4;
    case 3:
      return int64_t(u * 2);
    default:
      return pickConst(kInts);
    }
  }
  float interestingFloat(float old) {
    static constexpr std::array<float, 14> kFloats = {0.0f,
                                                      -0.0f,
                                                      1.0f,
                                                      -1.0f,
                                                      0.5f,
                                                      2.0f,
                                                      1e-45f,
                                                      1e-38f,
                                                      3.4e38f,
                                                      -3.4e38f,
                                                      1e10f,
                                                      -1e10f,
                                                      std::numeric_limits<float>::infinity(),
                                                      -std::numeric_limits<float>::infinity()};
    switch (below(5)) {
    case 0:
      return std::numeric_limits<float>::quiet_NaN();
    case 1:
      return old * -2.0f;
    default:
      return pickConst(kFloats);
    }
  }
  std::string interestingString() {
    if (chance(6)) {
      std::string s(size_t(below(12)), ' ');
      for (char& c : s)
        c = char(below(256));
      return s;
    }
    return pickConst(kStrings);
  }

  // ---- what the model has: collected before each mutation (pointers change when it does) ----
  std::vector<onnx::GraphProto*> graphs_;
  std::vector<std::pair<onnx::GraphProto*, int>> nodes_; // graph, node index
  std::vector<onnx::NodeProto*> functionNodes_;
  std::vector<onnx::TensorProto*> tensors_;
  std::vector<onnx::ValueInfoProto*> valueInfos_;

  void collect() {
    graphs_.clear();
    nodes_.clear();
    functionNodes_.clear();
    tensors_.clear();
    valueInfos_.clear();
    if (m_.has_graph()) collectGraph(m_.mutable_graph(), 0);
    for (auto& f : *m_.mutable_functions())
      for (auto& n : *f.mutable_node()) {
        functionNodes_.push_back(&n);
        collectAttrs(n, 1);
      }
  }
  void collectGraph(onnx::GraphProto* g, int depth) {
    if (depth > 4) return;
    graphs_.push_back(g);
    for (auto& t : *g->mutable_initializer())
      tensors_.push_back(&t);
    for (auto* vis : {g->mutable_input(), g->mutable_output(), g->mutable_value_info()})
      for (auto& vi : *vis)
        valueInfos_.push_back(&vi);
    for (int i = 0; i < g->node_size(); ++i) {
      nodes_.emplace_back(g, i);
      collectAttrs(*g->mutable_node(i), depth);
    }
  }
  void collectAttrs(onnx::NodeProto& n, int depth) {
    for (auto& a : *n.mutable_attribute()) {
      if (a.has_t()) tensors_.push_back(a.mutable_t());
      for (auto& t : *a.mutable_tensors())
        tensors_.push_back(&t);
      if (a.has_g()) collectGraph(a.mutable_g(), depth + 1);
      for (auto& g : *a.mutable_graphs())
        collectGraph(&g, depth + 1);
    }
  }
  onnx::NodeProto* anyNode() {
    size_t total = nodes_.size() + functionNodes_.size();
    if (total == 0) return nullptr;
    size_t i = below(total);
    if (i < nodes_.size()) return nodes_[i].first->mutable_node(nodes_[i].second);
    return functionNodes_[i - nodes_.size()];
  }
  // Every value name of a graph (inputs, initializers, node outputs).
  static std::vector<std::string> valueNames(const onnx::GraphProto& g) {
    std::vector<std::string> out;
    for (const auto& vi : g.input())
      out.push_back(vi.name());
    for (const auto& t : g.initializer())
      out.push_back(t.name());
    for (const auto& n : g.node())
      for (const auto& o : n.output())
        out.push_back(o);
    return out;
  }
  std::string someValueName(const onnx::GraphProto& g) {
    std::vector<std::string> names = valueNames(g);
    if (names.empty() || chance(10)) return chance(2) ? "" : "no_such_value";
    return pick(names);
  }

  // ---- the mutations ----
  bool mutateOnce() {
    switch (below(24)) {
    case 0:
    case 1:
    case 2:
      return mutateAttributeValue();
    case 3:
      return changeAttributeType();
    case 4:
      return addAttribute();
    case 5:
      return removeOrDuplicateAttribute();
    case 6:
    case 7:
      return mutateTensor();
    case 8:
      return mutateExternalData();
    case 9:
      return mutateValueInfo();
    case 10:
    case 11:
      return rewireNode();
    case 12:
      return changeOpType();
    case 13:
      return changeNodeList();
    case 14:
      return mutateGraphOutputs();
    case 15:
      return initializerAsInput();
    case 16:
      return addSubgraph();
    case 17:
      return mutateVersions();
    case 18:
      return wrapInFunction();
    case 19:
    case 20:
      return mutateStrings();
    default:
      return mutateAnyField();
    }
  }

  onnx::AttributeProto* anyAttribute() {
    std::vector<onnx::AttributeProto*> attrs;
    for (auto& [g, i] : nodes_)
      for (auto& a : *g->mutable_node(i)->mutable_attribute())
        attrs.push_back(&a);
    for (auto* n : functionNodes_)
      for (auto& a : *n->mutable_attribute())
        attrs.push_back(&a);
    return attrs.empty() ? nullptr : pick(attrs);
  }

  void mutateInts(pb::RepeatedField<int64_t>& v) {
    switch (below(5)) {
    case 0:
      v.Add(v.empty() ? interestingInt(1) : v.Get(int(below(size_t(v.size())))));
      return;
    case 1:
      if (!v.empty()) v.RemoveLast();
      return;
    case 2:
      v.Clear();
      if (chance(2))
        for (int i = int(below(9)); i > 0; --i)
          v.Add(interestingInt(1));
      return;
    default:
      if (v.empty())
        v.Add(interestingInt(0));
      else {
        int i = int(below(size_t(v.size())));
        v.Set(i, interestingInt(v.Get(i)));
      }
    }
  }
  void mutateFloats(pb::RepeatedField<float>& v) {
    if (v.empty() || chance(4)) {
      v.Add(interestingFloat(1.0f));
      return;
    }
    if (chance(4)) {
      v.RemoveLast();
      return;
    }
    int i = int(below(size_t(v.size())));
    v.Set(i, interestingFloat(v.Get(i)));
  }

  bool mutateAttributeValue() {
    onnx::AttributeProto* a = anyAttribute();
    if (!a) return false;
    switch (a->type()) {
    case onnx::AttributeProto::INT:
      a->set_i(interestingInt(a->i()));
      return true;
    case onnx::AttributeProto::INTS:
      mutateInts(*a->mutable_ints());
      return true;
    case onnx::AttributeProto::FLOAT:
      a->set_f(interestingFloat(a->f()));
      return true;
    case onnx::AttributeProto::FLOATS:
      mutateFloats(*a->mutable_floats());
      return true;
    case onnx::AttributeProto::STRING:
      a->set_s(interestingString());
      return true;
    case onnx::AttributeProto::STRINGS:
      if (a->strings_size() && chance(2))
        a->mutable_strings()->RemoveLast();
      else
        a->add_strings(interestingString());
      return true;
    case onnx::AttributeProto::TENSOR:
      return mutateOneTensor(*a->mutable_t());
    case onnx::AttributeProto::GRAPH:
      if (chance(3)) {
        a->clear_g();
        return true;
      }
      return false; // its nodes are mutated as part of the model
    default:
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(interestingInt(0));
      return true;
    }
  }

  bool changeAttributeType() {
    onnx::AttributeProto* a = anyAttribute();
    if (!a) return false;
    static constexpr std::array kTypes = {
        onnx::AttributeProto::UNDEFINED, onnx::AttributeProto::FLOAT,
        onnx::AttributeProto::INT,       onnx::AttributeProto::STRING,
        onnx::AttributeProto::TENSOR,    onnx::AttributeProto::GRAPH,
        onnx::AttributeProto::FLOATS,    onnx::AttributeProto::INTS,
        onnx::AttributeProto::STRINGS,   onnx::AttributeProto::TENSORS,
        onnx::AttributeProto::GRAPHS,    onnx::AttributeProto::SPARSE_TENSOR};
    auto t = pickConst(kTypes);
    // Convert the value where that is natural (ints <-> int), so that the type is what changes.
    if (t == onnx::AttributeProto::INTS && a->type() == onnx::AttributeProto::INT) {
      a->add_ints(a->i());
    } else if (t == onnx::AttributeProto::INT && a->ints_size()) {
      a->set_i(a->ints(0));
    } else if (t == onnx::AttributeProto::FLOAT && a->type() == onnx::AttributeProto::INT) {
      a->set_f(float(a->i()));
    } else if (t == onnx::AttributeProto::TENSOR && !a->has_t()) {
      onnx::TensorProto* tp = a->mutable_t();
      tp->set_data_type(onnx::TensorProto::INT64);
      tp->add_dims(1);
      tp->add_int64_data(a->i());
    } else if (t == onnx::AttributeProto::GRAPH && !a->has_g() && m_.has_graph()) {
      *a->mutable_g() = m_.graph();
    }
    if (chance(3)) { // leave the old payload there too (or not)
      a->clear_ints();
      a->clear_floats();
    }
    a->set_type(t);
    return true;
  }

  bool addAttribute() {
    onnx::NodeProto* n = anyNode();
    if (!n) return false;
    onnx::AttributeProto* a = n->add_attribute();
    a->set_name(pickConst(kAttrNames));
    switch (below(5)) {
    case 0:
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(interestingInt(1));
      break;
    case 1:
      a->set_type(onnx::AttributeProto::INTS);
      for (int i = int(below(5)); i >= 0; --i)
        a->add_ints(interestingInt(1));
      break;
    case 2:
      a->set_type(onnx::AttributeProto::FLOAT);
      a->set_f(interestingFloat(1.0f));
      break;
    case 3:
      a->set_type(onnx::AttributeProto::STRING);
      a->set_s(interestingString());
      break;
    default: {
      a->set_type(onnx::AttributeProto::TENSOR);
      onnx::TensorProto* t = a->mutable_t();
      t->set_data_type(chance(2) ? onnx::TensorProto::FLOAT : onnx::TensorProto::INT64);
      int64_t n0 = int64_t(below(4));
      if (!chance(4)) t->add_dims(n0);
      for (int64_t i = 0; i < n0; ++i) {
        if (t->data_type() == onnx::TensorProto::FLOAT)
          t->add_float_data(interestingFloat(1.0f));
        else
          t->add_int64_data(interestingInt(1));
      }
    }
    }
    if (chance(16)) a->set_ref_attr_name(pickConst(kAttrNames));
    return true;
  }

  bool removeOrDuplicateAttribute() {
    onnx::NodeProto* n = anyNode();
    if (!n || n->attribute_size() == 0) return false;
    int i = int(below(size_t(n->attribute_size())));
    if (chance(2)) {
      *n->add_attribute() = n->attribute(i); // the same name twice
      if (chance(2)) mutateAttributeOf(*n->mutable_attribute(n->attribute_size() - 1));
    } else {
      n->mutable_attribute()->DeleteSubrange(i, 1);
    }
    return true;
  }
  void mutateAttributeOf(onnx::AttributeProto& a) {
    if (a.type() == onnx::AttributeProto::INT) a.set_i(interestingInt(a.i()));
    if (a.type() == onnx::AttributeProto::INTS) mutateInts(*a.mutable_ints());
    if (a.type() == onnx::AttributeProto::FLOAT) a.set_f(interestingFloat(a.f()));
  }

  bool mutateTensor() {
    if (tensors_.empty()) return false;
    return mutateOneTensor(*pick(tensors_));
  }

  // Resizes a typed data list: adds or removes one, or a few, elements.
  template <typename T> void resize(pb::RepeatedField<T>& v) {
    int64_t d = chance(2) ? 1 : int64_t(below(64));
    if (chance(2)) {
      for (int64_t i = 0; i < d; ++i)
        v.Add(T(below(7)));
    } else {
      v.Truncate(int(std::max<int64_t>(0, v.size() - d)));
    }
  }

  bool mutateOneTensor(onnx::TensorProto& t) {
    switch (below(9)) {
    case 0: // a dimension
      if (t.dims_size() == 0 || chance(4))
        t.add_dims(interestingInt(1));
      else {
        int i = int(below(size_t(t.dims_size())));
        t.set_dims(i, interestingInt(t.dims(i)));
      }
      return true;
    case 1: // rank
      if (t.dims_size() && chance(2))
        t.mutable_dims()->RemoveLast();
      else
        t.clear_dims();
      return true;
    case 2: // data type (valid ones mostly, and a few that are not)
      t.set_data_type(chance(8) ? int(interestingInt(30)) : int(below(22)));
      return true;
    case 3: { // raw_data truncated or extended
      std::string* raw = t.mutable_raw_data();
      if (raw->empty() || chance(3))
        raw->append(size_t(1 + below(chance(2) ? 8 : 256)), char(below(256)));
      else
        raw->resize(size_t(below(raw->size())));
      return true;
    }
    case 4: // typed data lists
      if (t.float_data_size() || chance(3)) resize(*t.mutable_float_data());
      if (t.int64_data_size() || chance(3)) resize(*t.mutable_int64_data());
      if (t.int32_data_size() || chance(4)) resize(*t.mutable_int32_data());
      if (chance(6)) resize(*t.mutable_double_data());
      if (chance(6)) resize(*t.mutable_uint64_data());
      return true;
    case 5: // typed data <-> raw data
      if (t.has_raw_data()) {
        t.clear_raw_data();
      } else {
        std::string raw;
        for (float f : t.float_data())
          raw.append(reinterpret_cast<const char*>(&f), sizeof f);
        for (int64_t v : t.int64_data())
          raw.append(reinterpret_cast<const char*>(&v), sizeof v);
        t.set_raw_data(raw);
      }
      return true;
    case 6:
      t.mutable_segment()->set_begin(0);
      t.mutable_segment()->set_end(interestingInt(1));
      return true;
    case 7:
      if (chance(2)) t.add_string_data(interestingString());
      t.set_name(chance(2) ? "" : t.name() + "_");
      return true;
    default: // values inside raw_data
      if (t.raw_data().empty()) return false;
      for (int i = int(1 + below(4)); i > 0; --i)
        (*t.mutable_raw_data())[below(t.raw_data().size())] = char(below(256));
      return true;
    }
  }

  bool mutateExternalData() {
    if (tensors_.empty()) return false;
    onnx::TensorProto& t = *pick(tensors_);
    if (t.data_location() != onnx::TensorProto::EXTERNAL || chance(4)) {
      // Moves the tensor to the external file: the bytes come from weights.bin in the
      // fuzzers' scratch folder (4 KiB), at some offset.
      t.set_data_location(chance(8) ? onnx::TensorProto::DEFAULT : onnx::TensorProto::EXTERNAL);
      if (chance(2)) {
        t.clear_raw_data();
        t.clear_float_data();
        t.clear_int64_data();
        t.clear_int32_data();
      }
      t.clear_external_data();
      auto* loc = t.add_external_data();
      loc->set_key("location");
      loc->set_value(chance(2) ? "weights.bin" : pickConst(kLocations));
      if (chance(2)) {
        auto* off = t.add_external_data();
        off->set_key("offset");
        off->set_value(chance(2) ? std::to_string(below(64) * 4) : pickConst(kNumbers));
      }
      if (chance(2)) {
        auto* len = t.add_external_data();
        len->set_key("length");
        len->set_value(pickConst(kNumbers));
      }
      return true;
    }
    switch (below(4)) {
    case 0: { // an entry's value
      if (t.external_data_size() == 0) return false;
      auto* kv = t.mutable_external_data(int(below(size_t(t.external_data_size()))));
      kv->set_value(kv->key() == "location" ? pickConst(kLocations) : pickConst(kNumbers));
      return true;
    }
    case 1: { // a key twice, or an unknown key
      auto* kv = t.add_external_data();
      static constexpr std::array kKeys = {"location", "offset", "length", "checksum", ""};
      kv->set_key(pickConst(kKeys));
      kv->set_value(kv->key() == "location" ? pickConst(kLocations) : pickConst(kNumbers));
      return true;
    }
    case 2:
      if (t.external_data_size() == 0) return false;
      t.mutable_external_data()->DeleteSubrange(int(below(size_t(t.external_data_size()))), 1);
      return true;
    default: // and inline data as well
      t.set_raw_data(std::string(size_t(below(32)), '\x01'));
      return true;
    }
  }

  void mutateShape(onnx::TensorShapeProto& s) {
    switch (below(5)) {
    case 0:
      s.add_dim()->set_dim_value(interestingInt(1));
      return;
    case 1:
      if (s.dim_size()) s.mutable_dim()->RemoveLast();
      return;
    case 2:
      if (s.dim_size())
        s.mutable_dim(int(below(size_t(s.dim_size()))))->set_dim_param(chance(2) ? "N" : "batch");
      return;
    default:
      if (s.dim_size()) {
        auto* d = s.mutable_dim(int(below(size_t(s.dim_size()))));
        d->set_dim_value(interestingInt(d->dim_value()));
      } else {
        s.add_dim()->set_dim_value(int64_t(below(4)));
      }
    }
  }

  void mutateType(onnx::TypeProto& t) {
    switch (below(6)) {
    case 0: // element type
      t.mutable_tensor_type()->set_elem_type(chance(8) ? int(interestingInt(30)) : int(below(22)));
      return;
    case 1: { // a sequence, map or optional of what it was
      onnx::TypeProto inner = t;
      switch (below(4)) {
      case 0:
        *t.mutable_sequence_type()->mutable_elem_type() = inner;
        return;
      case 1:
        t.mutable_map_type()->set_key_type(onnx::TensorProto::INT64);
        *t.mutable_map_type()->mutable_value_type() = inner;
        return;
      case 2:
        *t.mutable_optional_type()->mutable_elem_type() = inner;
        return;
      default:
        t.mutable_sparse_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
        return;
      }
    }
    case 2:
      if (chance(2))
        t.mutable_tensor_type()->clear_shape();
      else
        t.clear_value();
      return;
    default:
      mutateShape(*t.mutable_tensor_type()->mutable_shape());
    }
  }

  bool mutateValueInfo() {
    if (valueInfos_.empty()) return false;
    onnx::ValueInfoProto& vi = *pick(valueInfos_);
    if (chance(8))
      vi.set_name(chance(2) ? "" : vi.name() + "_");
    else
      mutateType(*vi.mutable_type());
    return true;
  }

  bool rewireNode() {
    if (nodes_.empty()) return false;
    auto [g, idx] = pick(nodes_);
    onnx::NodeProto& n = *g->mutable_node(idx);
    auto* ins = n.mutable_input();
    auto* outs = n.mutable_output();
    switch (below(9)) {
    case 0: // swap two inputs
      if (ins->size() < 2) return false;
      ins->SwapElements(int(below(size_t(ins->size()))), int(below(size_t(ins->size()))));
      return true;
    case 1: // drop one
      if (ins->empty()) return false;
      ins->DeleteSubrange(int(below(size_t(ins->size()))), 1);
      return true;
    case 2: // duplicate one
      if (ins->empty()) return false;
      *ins->Add() = ins->Get(int(below(size_t(ins->size()))));
      return true;
    case 3: // point one at another value (a later node's output: a cycle, or its own output)
      if (ins->empty())
        *ins->Add() = someValueName(*g);
      else
        *ins->Mutable(int(below(size_t(ins->size())))) =
            chance(6) && outs->size() ? outs->Get(0) : someValueName(*g);
      return true;
    case 4: // an absent optional input in the middle
      if (ins->empty()) return false;
      ins->Mutable(int(below(size_t(ins->size()))))->clear();
      return true;
    case 5: // an output that is produced twice, is a graph input or initializer, or is empty
      if (outs->empty()) return false;
      *outs->Mutable(int(below(size_t(outs->size())))) = someValueName(*g);
      return true;
    case 6: // an extra output
      *outs->Add() = n.name() + "_extra" + std::to_string(below(4));
      return true;
    case 7: // one output less
      if (outs->empty()) return false;
      outs->RemoveLast();
      return true;
    default: // the node's name: empty, or that of another node
      n.set_name(chance(2) ? "" : g->node(int(below(size_t(g->node_size())))).name());
      return true;
    }
  }

  bool changeOpType() {
    onnx::NodeProto* n = anyNode();
    if (!n) return false;
    if (chance(6))
      n->set_domain(pickConst(kDomains));
    else
      n->set_op_type(pickConst(kOpTypes));
    return true;
  }

  bool changeNodeList() {
    if (graphs_.empty()) return false;
    onnx::GraphProto& g = *pick(graphs_);
    if (g.node_size() == 0) return false;
    int i = int(below(size_t(g.node_size())));
    switch (below(3)) {
    case 0: // duplicate (outputs produced twice unless renamed)
      *g.add_node() = g.node(i);
      if (chance(2)) {
        auto& copy = *g.mutable_node(g.node_size() - 1);
        for (auto& o : *copy.mutable_output())
          o += "_dup";
        copy.set_name(copy.name() + "_dup");
      }
      return true;
    case 1:
      g.mutable_node()->DeleteSubrange(i, 1);
      return true;
    default: // move: order in the file must not matter
      g.mutable_node()->SwapElements(i, int(below(size_t(g.node_size()))));
      return true;
    }
  }

  bool mutateGraphOutputs() {
    if (!m_.has_graph()) return false;
    onnx::GraphProto& g = *m_.mutable_graph();
    switch (below(5)) {
    case 0: // an output listed twice
      if (g.output_size() == 0) return false;
      *g.add_output() = g.output(int(below(size_t(g.output_size()))));
      return true;
    case 1: { // an input, initializer or intermediate value as output
      onnx::ValueInfoProto* vi = g.add_output();
      vi->set_name(someValueName(g));
      if (chance(2)) vi->mutable_type()->mutable_tensor_type()->set_elem_type(int(below(17)));
      return true;
    }
    case 2:
      if (g.output_size() == 0) return false;
      g.mutable_output()->DeleteSubrange(int(below(size_t(g.output_size()))), 1);
      return true;
    case 3: // the declared type of an output
      if (g.output_size() == 0) return false;
      mutateType(*g.mutable_output(int(below(size_t(g.output_size()))))->mutable_type());
      return true;
    default: // remove an input (its users dangle) or an initializer
      if (g.input_size() && chance(2)) {
        g.mutable_input()->DeleteSubrange(int(below(size_t(g.input_size()))), 1);
        return true;
      }
      if (g.initializer_size() == 0) return false;
      if (chance(2))
        g.mutable_initializer()->DeleteSubrange(int(below(size_t(g.initializer_size()))), 1);
      else
        *g.add_initializer() = g.initializer(int(below(size_t(g.initializer_size())))); // twice
      return true;
    }
  }

  bool initializerAsInput() {
    if (!m_.has_graph() || m_.graph().initializer_size() == 0) return false;
    onnx::GraphProto& g = *m_.mutable_graph();
    const onnx::TensorProto& t = g.initializer(int(below(size_t(g.initializer_size()))));
    onnx::ValueInfoProto* vi = g.add_input();
    vi->set_name(t.name());
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(t.data_type());
    for (int64_t d : t.dims())
      tt->mutable_shape()->add_dim()->set_dim_value(d);
    if (chance(2)) mutateType(*vi->mutable_type()); // contradicting the initializer
    return true;
  }

  bool addSubgraph() {
    onnx::NodeProto* n = anyNode();
    if (!n || !m_.has_graph()) return false;
    onnx::GraphProto body;
    if (m_.graph().ByteSizeLong() < 4096 || chance(4)) {
      body = m_.graph();
      body.clear_initializer();
    } else { // a tiny body: y = Identity(x)
      body.set_name("tiny");
      auto* in = body.add_input();
      in->set_name("x");
      in->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
      auto* out = body.add_output();
      out->set_name("y");
      out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
      auto* id = body.add_node();
      id->set_op_type("Identity");
      id->add_input("x");
      id->add_output("y");
    }
    switch (below(3)) {
    case 0: { // a control-flow node around it
      static constexpr std::array kFlow = {"If", "Loop", "Scan"};
      n->set_op_type(pickConst(kFlow));
      n->set_domain("");
      static constexpr std::array kBodies = {"then_branch", "else_branch", "body"};
      for (int i = 0; i < 2; ++i) {
        auto* a = n->add_attribute();
        a->set_name(pickConst(kBodies));
        a->set_type(onnx::AttributeProto::GRAPH);
        *a->mutable_g() = body;
      }
      if (chance(2)) {
        auto* a = n->add_attribute();
        a->set_name("num_scan_inputs");
        a->set_type(onnx::AttributeProto::INT);
        a->set_i(interestingInt(1));
      }
      return true;
    }
    case 1: { // a graph attribute on an op that takes none
      auto* a = n->add_attribute();
      a->set_name(chance(2) ? "body" : pickConst(kAttrNames));
      a->set_type(onnx::AttributeProto::GRAPH);
      *a->mutable_g() = body;
      return true;
    }
    default: { // GRAPHS
      auto* a = n->add_attribute();
      a->set_name("branches");
      a->set_type(onnx::AttributeProto::GRAPHS);
      *a->add_graphs() = body;
      return true;
    }
    }
  }

  // A model string becomes a payload (tests/fuzz/Payloads.h) that tries to run code from
  // generated sources or break a report: the graph's name, a node's name, a value renamed
  // everywhere in its graph, a doc string, the producer or metadata.
  bool mutateStrings() {
    if (!m_.has_graph() || graphs_.empty()) return false;
    auto payload = [&] {
      std::string p = pickConst(stringPayloads());
      if (chance(2)) p += std::to_string(below(1000)); // distinct names from one payload
      return p;
    };
    onnx::GraphProto* g = pick(graphs_);
    switch (below(6)) {
    case 0:
      g->set_name(payload());
      return true;
    case 1: {
      onnx::NodeProto* n = anyNode();
      if (!n) return false;
      n->set_name(payload());
      return true;
    }
    case 2:
    case 3: { // a value, renamed consistently in its graph
      std::vector<std::string> names = valueNames(*g);
      if (names.empty()) return false;
      std::string from = pick(names), to = payload();
      if (from.empty()) return false;
      auto rename = [&](std::string* s) {
        if (*s == from) *s = to;
      };
      for (auto* vis : {g->mutable_input(), g->mutable_output(), g->mutable_value_info()})
        for (auto& vi : *vis)
          rename(vi.mutable_name());
      for (auto& t : *g->mutable_initializer())
        rename(t.mutable_name());
      for (auto& n : *g->mutable_node()) {
        for (auto& i : *n.mutable_input())
          rename(&i);
        for (auto& o : *n.mutable_output())
          rename(&o);
      }
      return true;
    }
    case 4: {
      onnx::NodeProto* n = anyNode();
      if (n) n->set_doc_string(payload());
      g->set_doc_string(payload());
      m_.set_doc_string(payload());
      return true;
    }
    default: {
      m_.set_producer_name(payload());
      m_.set_producer_version(payload());
      auto* p = m_.add_metadata_props();
      p->set_key(payload());
      p->set_value(payload());
      return true;
    }
    }
  }

  bool mutateVersions() {
    switch (below(4)) {
    case 0:
      m_.set_ir_version(chance(2) ? int64_t(below(11)) : interestingInt(m_.ir_version()));
      return true;
    case 1: { // the default-domain opset
      for (auto& o : *m_.mutable_opset_import())
        if (o.domain().empty() || o.domain() == "ai.onnx") {
          o.set_version(chance(2) ? int64_t(below(21)) : interestingInt(o.version()));
          return true;
        }
      auto* o = m_.add_opset_import();
      o->set_version(int64_t(below(21)));
      return true;
    }
    case 2: { // another opset entry, perhaps for the same domain
      auto* o = m_.add_opset_import();
      o->set_domain(pickConst(kDomains));
      o->set_version(interestingInt(13));
      return true;
    }
    default:
      if (m_.opset_import_size() == 0) return false;
      m_.mutable_opset_import()->DeleteSubrange(int(below(size_t(m_.opset_import_size()))), 1);
      return true;
    }
  }

  // Moves a node into a model-local function F<k> of domain "local" and calls it instead, or
  // mutates an existing function's interface.
  bool wrapInFunction() {
    if (m_.functions_size() && chance(3)) {
      onnx::FunctionProto& f = *m_.mutable_functions(int(below(size_t(m_.functions_size()))));
      switch (below(5)) {
      case 0:
        f.add_input("extra_in");
        return true;
      case 1:
        if (f.output_size()) f.mutable_output()->RemoveLast();
        return true;
      case 2:
        f.add_attribute(pickConst(kAttrNames));
        return true;
      case 3: { // the function calls itself (recursion) or another
        auto* call = f.add_node();
        call->set_op_type(m_.functions(int(below(size_t(m_.functions_size())))).name());
        call->set_domain("local");
        if (f.input_size()) call->add_input(f.input(0));
        call->add_output("rec_out");
        return true;
      }
      default:
        for (auto& o : *f.mutable_opset_import())
          o.set_version(interestingInt(o.version()));
        return true;
      }
    }
    if (nodes_.empty()) return false;
    auto [g, idx] = pick(nodes_);
    onnx::NodeProto& n = *g->mutable_node(idx);
    onnx::FunctionProto* f = m_.add_functions();
    f->set_name("F" + std::to_string(m_.functions_size()));
    f->set_domain("local");
    *f->mutable_opset_import() = m_.opset_import();
    onnx::NodeProto* body = f->add_node();
    *body = n;
    body->set_name("inner");
    for (int i = 0; i < n.input_size(); ++i) {
      std::string formal = "i" + std::to_string(i);
      f->add_input(formal);
      if (!n.input(i).empty()) body->set_input(i, formal);
    }
    for (int i = 0; i < n.output_size(); ++i) {
      std::string formal = "o" + std::to_string(i);
      f->add_output(formal);
      body->set_output(i, formal);
    }
    // Attributes become the function's, referenced from the body (IR 8 style), half the time.
    if (chance(2)) {
      for (auto& a : *body->mutable_attribute()) {
        f->add_attribute(a.name());
        a.set_ref_attr_name(a.name());
      }
    } else {
      n.clear_attribute();
    }
    n.set_op_type(f->name());
    n.set_domain("local");
    bool haveLocal = false;
    for (const auto& o : m_.opset_import())
      haveLocal |= o.domain() == "local";
    if (!haveLocal) {
      auto* o = m_.add_opset_import();
      o->set_domain("local");
      o->set_version(1);
    }
    return true;
  }

  // Any field of any message of the model, through reflection: walks down from the model
  // through set fields and changes one scalar.
  bool mutateAnyField() {
    pb::Message* msg = &m_;
    for (int depth = 0; depth < 12; ++depth) {
      const pb::Reflection* r = msg->GetReflection();
      std::vector<const pb::FieldDescriptor*> fields;
      r->ListFields(*msg, &fields);
      if (fields.empty()) return false;
      const pb::FieldDescriptor* f = pick(fields);
      if (f->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
        if (f->is_repeated()) {
          int size = r->FieldSize(*msg, f);
          msg = r->MutableRepeatedMessage(msg, f, int(below(size_t(size))));
        } else {
          msg = r->MutableMessage(msg, f);
        }
        if (chance(4)) continue;
        // Mutate a scalar of this message (or go on down if it has none).
        std::vector<const pb::FieldDescriptor*> set;
        msg->GetReflection()->ListFields(*msg, &set);
        bool hasScalar = std::any_of(set.begin(), set.end(), [](auto* x) {
          return x->cpp_type() != pb::FieldDescriptor::CPPTYPE_MESSAGE;
        });
        if (!hasScalar) continue;
        while (true) {
          const pb::FieldDescriptor* s = pick(set);
          if (s->cpp_type() != pb::FieldDescriptor::CPPTYPE_MESSAGE) return mutateScalar(*msg, s);
        }
      }
      return mutateScalar(*msg, f);
    }
    return false;
  }

  bool mutateScalar(pb::Message& msg, const pb::FieldDescriptor* f) {
    const pb::Reflection* r = msg.GetReflection();
    int index = f->is_repeated() ? int(below(size_t(r->FieldSize(msg, f)))) : -1;
    auto setInt = [&](int64_t v) {
      switch (f->cpp_type()) {
      case pb::FieldDescriptor::CPPTYPE_INT32:
        index < 0 ? r->SetInt32(&msg, f, int32_t(v))
                  : r->SetRepeatedInt32(&msg, f, index, int32_t(v));
        break;
      case pb::FieldDescriptor::CPPTYPE_INT64:
        index < 0 ? r->SetInt64(&msg, f, v) : r->SetRepeatedInt64(&msg, f, index, v);
        break;
      case pb::FieldDescriptor::CPPTYPE_UINT32:
        index < 0 ? r->SetUInt32(&msg, f, uint32_t(v))
                  : r->SetRepeatedUInt32(&msg, f, index, uint32_t(v));
        break;
      case pb::FieldDescriptor::CPPTYPE_UINT64:
        index < 0 ? r->SetUInt64(&msg, f, uint64_t(v))
                  : r->SetRepeatedUInt64(&msg, f, index, uint64_t(v));
        break;
      default:
        break;
      }
    };
    switch (f->cpp_type()) {
    case pb::FieldDescriptor::CPPTYPE_INT32:
    case pb::FieldDescriptor::CPPTYPE_INT64:
    case pb::FieldDescriptor::CPPTYPE_UINT32:
    case pb::FieldDescriptor::CPPTYPE_UINT64:
      setInt(interestingInt(1));
      return true;
    case pb::FieldDescriptor::CPPTYPE_FLOAT: {
      float v = interestingFloat(1.0f);
      index < 0 ? r->SetFloat(&msg, f, v) : r->SetRepeatedFloat(&msg, f, index, v);
      return true;
    }
    case pb::FieldDescriptor::CPPTYPE_DOUBLE: {
      double v = interestingFloat(1.0f);
      index < 0 ? r->SetDouble(&msg, f, v) : r->SetRepeatedDouble(&msg, f, index, v);
      return true;
    }
    case pb::FieldDescriptor::CPPTYPE_BOOL:
      index < 0 ? r->SetBool(&msg, f, !r->GetBool(msg, f))
                : r->SetRepeatedBool(&msg, f, index, true);
      return true;
    case pb::FieldDescriptor::CPPTYPE_ENUM: {
      const pb::EnumDescriptor* e = f->enum_type();
      int v = e->value(int(below(size_t(e->value_count()))))->number();
      index < 0 ? r->SetEnumValue(&msg, f, v) : r->SetRepeatedEnumValue(&msg, f, index, v);
      return true;
    }
    case pb::FieldDescriptor::CPPTYPE_STRING: {
      std::string v =
          chance(2) ? interestingString() : std::string(kOpTypes[below(kOpTypes.size())]);
      index < 0 ? r->SetString(&msg, f, v) : r->SetRepeatedString(&msg, f, index, v);
      return true;
    }
    default:
      return false;
    }
  }

  onnx::ModelProto& m_;
  std::mt19937_64 rng_;
};

bool parseModel(const uint8_t* data, size_t size, onnx::ModelProto& m) {
  return size > 0 && m.ParseFromArray(data, int(size)) && m.has_graph();
}

} // namespace

size_t mutateOnnxModel(uint8_t* data, size_t size, size_t maxSize, unsigned seed,
                       ByteMutator bytes) {
  onnx::ModelProto m;
  // Byte mutations when the input is not a model, and for one mutation in 16 when it is (the
  // parser and the importer's "not a model" paths).
  if ((seed & 15) == 0 || !parseModel(data, size, m)) return bytes(data, size, maxSize);
  Mutator mut(m, seed);
  if (!mut.run()) return bytes(data, size, maxSize);
  std::string out;
  if (!m.SerializeToString(&out) || out.size() > maxSize) return bytes(data, size, maxSize);
  std::memcpy(data, out.data(), out.size());
  return out.size();
}

size_t crossOverOnnxModels(const uint8_t* data1, size_t size1, const uint8_t* data2, size_t size2,
                           uint8_t* out, size_t maxOutSize, unsigned seed) {
  onnx::ModelProto a, b;
  if (!parseModel(data1, size1, a) || !parseModel(data2, size2, b)) return 0;
  std::mt19937_64 rng(seed);
  auto below = [&](size_t n) { return n ? size_t(rng() % n) : 0; };
  onnx::GraphProto& ga = *a.mutable_graph();
  const onnx::GraphProto& gb = b.graph();
  switch (below(3)) {
  case 0: { // a run of b's nodes, with the initializers they read, appended to a's graph
    if (gb.node_size() == 0) return 0;
    int from = int(below(size_t(gb.node_size())));
    int count = 1 + int(below(4));
    std::vector<std::string> reads;
    for (int i = from; i < std::min(gb.node_size(), from + count); ++i) {
      *ga.add_node() = gb.node(i);
      reads.insert(reads.end(), gb.node(i).input().begin(), gb.node(i).input().end());
    }
    for (const auto& t : gb.initializer())
      if (std::find(reads.begin(), reads.end(), t.name()) != reads.end()) *ga.add_initializer() = t;
    // Often, one of a's values feeds the first spliced node, so that the graphs connect.
    if (ga.node_size() > 1 && below(2) == 0) {
      const onnx::NodeProto& some = ga.node(int(below(size_t(ga.node_size() - 1))));
      auto* first = ga.mutable_node(ga.node_size() - std::min(count, gb.node_size() - from));
      if (some.output_size() && first->input_size()) first->set_input(0, some.output(0));
    }
    break;
  }
  case 1: // b's initializers replace a's of the same name (other shapes, types, data)
    for (auto& t : *ga.mutable_initializer())
      for (const auto& u : gb.initializer())
        if (u.name() == t.name() || below(8) == 0) {
          std::string name = t.name();
          t = u;
          t.set_name(name);
          break;
        }
    break;
  default: // b's functions and opsets
    for (const auto& f : b.functions())
      *a.add_functions() = f;
    for (const auto& o : b.opset_import())
      *a.add_opset_import() = o;
    if (b.functions_size() == 0 && gb.node_size()) *ga.add_node() = gb.node(0);
    break;
  }
  std::string bytes;
  if (!a.SerializeToString(&bytes) || bytes.size() > maxOutSize) return 0;
  std::memcpy(out, bytes.data(), bytes.size());
  return bytes.size();
}

} // namespace triad::fuzz
