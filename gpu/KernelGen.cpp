// Shared pieces of the kernel generators, and the elementwise generator.
#include "gpu/KernelGen.h"
#include "gpu/CodeWriter.h"
#include "ir/Escape.h"

#include <algorithm>
#include <cctype>
#include <regex>
#include <set>

namespace triad::gpu {

namespace {

// Words a kernel or variable name must not be (OpenCL C keywords, types and builtins we use).
const std::set<std::string, std::less<>>& reservedWords() {
  static const std::set<std::string, std::less<>> words = {
      "auto",      "break",      "case",     "char",    "const",     "continue",  "default",
      "do",        "double",     "else",     "enum",    "extern",    "float",     "for",
      "goto",      "if",         "inline",   "int",     "long",      "register",  "restrict",
      "return",    "short",      "signed",   "sizeof",  "static",    "struct",    "switch",
      "typedef",   "union",      "unsigned", "void",    "volatile",  "while",     "kernel",
      "global",    "local",      "constant", "private", "half",      "bool",      "uint",
      "uchar",     "ushort",     "ulong",    "size_t",  "image2d_t", "sampler_t", "event_t",
      "read_only", "write_only", "exp",      "log",     "max",       "min",       "fmax",
      "fmin",      "sqrt",       "rsqrt",    "mad",     "barrier",   "acc",       "main"};
  return words;
}

// OpenCL C built-in functions: a kernel named like one of them does not link (PoCL renames the
// built-in and the kernel disappears), so such layer names ("tanh", "floor") get a prefix.
bool isBuiltinFunction(std::string_view s) {
  static const std::set<std::string, std::less<>> builtins = {"acos",
                                                              "acosh",
                                                              "acospi",
                                                              "asin",
                                                              "asinh",
                                                              "asinpi",
                                                              "atan",
                                                              "atan2",
                                                              "atanh",
                                                              "atanpi",
                                                              "atan2pi",
                                                              "cbrt",
                                                              "ceil",
                                                              "copysign",
                                                              "cos",
                                                              "cosh",
                                                              "cospi",
                                                              "erfc",
                                                              "erf",
                                                              "exp2",
                                                              "exp10",
                                                              "expm1",
                                                              "fabs",
                                                              "fdim",
                                                              "floor",
                                                              "fma",
                                                              "fmod",
                                                              "fract",
                                                              "frexp",
                                                              "hypot",
                                                              "ilogb",
                                                              "ldexp",
                                                              "lgamma",
                                                              "lgamma_r",
                                                              "log2",
                                                              "log10",
                                                              "log1p",
                                                              "logb",
                                                              "maxmag",
                                                              "minmag",
                                                              "modf",
                                                              "nan",
                                                              "nextafter",
                                                              "pow",
                                                              "pown",
                                                              "powr",
                                                              "remainder",
                                                              "remquo",
                                                              "rint",
                                                              "rootn",
                                                              "round",
                                                              "sin",
                                                              "sincos",
                                                              "sinh",
                                                              "sinpi",
                                                              "tan",
                                                              "tanh",
                                                              "tanpi",
                                                              "tgamma",
                                                              "trunc",
                                                              "clamp",
                                                              "degrees",
                                                              "mix",
                                                              "radians",
                                                              "step",
                                                              "smoothstep",
                                                              "sign",
                                                              "abs",
                                                              "abs_diff",
                                                              "add_sat",
                                                              "hadd",
                                                              "rhadd",
                                                              "clz",
                                                              "mad_hi",
                                                              "mad_sat",
                                                              "mul_hi",
                                                              "rotate",
                                                              "sub_sat",
                                                              "upsample",
                                                              "popcount",
                                                              "mad24",
                                                              "mul24",
                                                              "cross",
                                                              "dot",
                                                              "distance",
                                                              "length",
                                                              "normalize",
                                                              "fast_distance",
                                                              "fast_length",
                                                              "fast_normalize",
                                                              "isequal",
                                                              "isnotequal",
                                                              "isgreater",
                                                              "isgreaterequal",
                                                              "isless",
                                                              "islessequal",
                                                              "islessgreater",
                                                              "isfinite",
                                                              "isinf",
                                                              "isnan",
                                                              "isnormal",
                                                              "isordered",
                                                              "isunordered",
                                                              "signbit",
                                                              "any",
                                                              "all",
                                                              "bitselect",
                                                              "select",
                                                              "vload",
                                                              "vstore",
                                                              "printf",
                                                              "prefetch",
                                                              "shuffle",
                                                              "shuffle2",
                                                              "mem_fence",
                                                              "read_mem_fence",
                                                              "write_mem_fence",
                                                              "async_work_group_copy",
                                                              "wait_group_events",
                                                              "native_exp",
                                                              "native_log",
                                                              "native_sin",
                                                              "native_cos",
                                                              "half_exp",
                                                              "convert_float"};
  return builtins.count(s) > 0;
}

bool startsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

/// Names a kernel cannot take in a program: keywords and built-ins (above), built-in families
/// (get_*, atomic_*, convert_*, as_*, vload*, ...), OpenCL C's predefined macros (CLK_*, FLT_*,
/// M_PI, ...), the macros of the GEMM kernels and Triad's own helpers (triad_*, TRIAD_*).
bool clashesWithProgram(std::string_view s) {
  static const std::set<std::string, std::less<>> macros = {
      "TILE_M", "TILE_N",   "TILE_K",      "WG_M",          "WG_N",         "TM",
      "TN",     "VW",       "MAXFLOAT",    "HUGE_VAL",      "HUGE_VALF",    "INFINITY",
      "NAN",    "vec_step", "kernel_exec", "ENDIAN_LITTLE", "IMAGE_SUPPORT"};
  static const std::string_view prefixes[] = {
      "get_",    "atomic_", "atom_",      "convert_",    "as_",    "vload",      "vstore",
      "native_", "half_",   "read_image", "write_image", "async_", "sub_group_", "work_group_",
      "triad_",  "TRIAD_",  "Triad_",     "CLK_",        "CL_",    "FLT_",       "DBL_",
      "HALF_",   "M_",      "FP_",        "CHAR_",       "SCHAR_", "UCHAR_",     "SHRT_",
      "USHRT_",  "INT_",    "UINT_",      "LONG_",       "ULONG_"};
  if (s[0] >= '0' && s[0] <= '9') return true;
  if (reservedWords().count(s) || isBuiltinFunction(s) || macros.count(s)) return true;
  for (std::string_view p : prefixes)
    if (startsWith(s, p)) return true;
  return false;
}

/// "<name>_im2col", "<name>_sel" and "<name>_[siwe]<digits>": the names of a kernel's helper
/// function and __constant tables (GemmGen.cpp, GpuLoweringsIndex.cpp).
bool endsLikeHelper(std::string_view s) {
  for (std::string_view suffix : {"_im2col", "_sel"})
    if (s.size() > suffix.size() && s.substr(s.size() - suffix.size()) == suffix) return true;
  size_t end = s.size(), digits = end;
  while (digits > 0 && s[digits - 1] >= '0' && s[digits - 1] <= '9')
    --digits;
  return digits < end && digits >= 3 && s[digits - 2] == '_' &&
         std::string_view("siwe").find(s[digits - 1]) != std::string_view::npos;
}

} // namespace

std::string kernelIdentifier(std::string_view layer) {
  // The one legalisation of model names (ir/Escape.h), then what the OpenCL C program needs on
  // top: no built-in function, macro or helper of the program as a kernel name.
  std::string s = escape::identifier(layer, escape::Lang::OpenCL, "layer");
  if (clashesWithProgram(s)) s = escape::identifier("k_" + s, escape::Lang::OpenCL, "layer");
  // Helpers and tables of a kernel are named after it ("<kernel>_im2col", "<kernel>_sel",
  // "<kernel>_s0"): no kernel name ends like one of them, so none is another kernel's helper.
  if (endsLikeHelper(s)) {
    if (s.size() > escape::kMaxIdentifier - 2) s.resize(escape::kMaxIdentifier - 2);
    while (s.back() == '_')
      s.pop_back();
    s += "_k";
  }
  return s;
}

std::string programSource(std::span<const GeneratedKernel> kernels) {
  std::string body;
  for (const GeneratedKernel& k : kernels) {
    body += '\n';
    body += k.source;
  }
  std::string helpers = scalarHelpers(body);
  // Kernels on float64 elements (or with double math) need cl_khr_fp64; the code generator
  // compiles them only for devices that have it.
  static const std::regex comment("//[^\n]*"), word("\\bdouble\\b");
  std::string code = std::regex_replace(helpers + body, comment, "");
  bool fp64 = std::regex_search(code, word);
  return std::string("// Generated by Triad (gpu/KernelGen): OpenCL C 1.2, ") +
         (fp64 ? "cl_khr_fp64" : "no extensions") + ". Do not edit.\n" +
         (fp64 ? "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" : "") +
         (helpers.empty() ? "" : "\n" + helpers) + body;
}

std::string programSource(const GeneratedKernel& kernel) {
  return programSource(std::span<const GeneratedKernel>(&kernel, 1));
}

std::string describeEpilogue(std::string_view code, std::string_view description) {
  if (code.empty()) return "none";
  if (!description.empty()) return std::string(description);
  std::string s(code);
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

std::string joinParams(const std::vector<std::string>& params, int indent) {
  std::string s;
  for (size_t i = 0; i < params.size(); ++i) {
    if (i) s += ",\n" + std::string(size_t(indent), ' ');
    s += params[i];
  }
  return s;
}

std::string paramName(std::string_view decl) {
  size_t end = decl.size();
  while (end > 0 && (decl[end - 1] == ' ' || decl[end - 1] == ']' || decl[end - 1] == '['))
    --end;
  size_t begin = end;
  auto identChar = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  };
  while (begin > 0 && identChar(decl[begin - 1])) // digits too: "x1", "ep0"
    --begin;
  return std::string(decl.substr(begin, end - begin));
}

void appendParams(const std::vector<std::string>& extra, std::vector<std::string>& decls,
                  std::vector<std::string>& names) {
  for (const std::string& e : extra) {
    decls.push_back(e);
    names.push_back(paramName(e));
  }
}

std::string workGroupReduceHelpers() {
  return R"(#ifndef TRIAD_WORK_GROUP_REDUCE
#define TRIAD_WORK_GROUP_REDUCE
// Work-group reductions in local memory. Every work-item of the (1-D, power-of-two sized)
// work-group calls them with its partial value; all of them get the result. `scratch` holds
// one float per work-item and may be reused after the call.
float triad_work_group_sum(float v, __local float* scratch) {
  const int lid = get_local_id(0);
  scratch[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = get_local_size(0) / 2; s > 0; s >>= 1) {
    if (lid < s) scratch[lid] += scratch[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const float r = scratch[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return r;
}

float triad_work_group_max(float v, __local float* scratch) {
  const int lid = get_local_id(0);
  scratch[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = get_local_size(0) / 2; s > 0; s >>= 1) {
    if (lid < s) scratch[lid] = fmax(scratch[lid], scratch[lid + s]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const float r = scratch[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return r;
}
#endif
)";
}

// ---------------------------------------------------------------------------------------------
// Elementwise

std::string ElementwiseParams::toString() const {
  return fmt::format("wg {} items {}", wgSize, itemsPerThread);
}

namespace {

std::string shapeString(const std::vector<int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ","));
}

} // namespace

GeneratedKernel generateElementwise(std::string_view layer, const std::vector<int64_t>& outShape,
                                    const std::vector<ElementwiseInput>& inputs,
                                    std::string_view body, const ElementwiseParams& params) {
  if (body.empty()) fail(ErrorKind::Usage, "elementwise '{}': empty body expression", layer);
  ElementwiseChain chain;
  chain.outShape = outShape;
  chain.inputs = inputs;
  chain.result = std::string(body);
  return generateElementwiseChain(layer, chain, params);
}

GeneratedKernel generateElementwiseChain(std::string_view layer, const ElementwiseChain& chain,
                                         const ElementwiseParams& params) {
  const std::vector<int64_t>& outShape = chain.outShape;
  const std::vector<ElementwiseInput>& inputs = chain.inputs;
  const std::string& body = chain.result;
  if (params.wgSize < 1 || params.itemsPerThread < 1)
    fail(ErrorKind::Usage, "elementwise '{}': work-group size and items per thread must be >= 1",
         layer);
  if (body.empty()) fail(ErrorKind::Usage, "elementwise '{}': empty result expression", layer);
  int64_t total = 1;
  for (int64_t d : outShape) {
    if (d < 0) fail(ErrorKind::Usage, "elementwise '{}': negative output dimension", layer);
    total *= d;
  }
  if (total >= (int64_t(1) << 31))
    fail(ErrorKind::Unsupported, "elementwise '{}': {} elements exceed 32-bit indexing", layer,
         total);
  const size_t rank = outShape.size();

  // Per input: element strides aligned to the output's dimensions (0 where it broadcasts).
  std::set<std::string, std::less<>> names;
  std::vector<std::vector<int64_t>> strides;
  for (const ElementwiseInput& in : inputs) {
    if (!escape::isIdentifier(in.name) || reservedWords().count(in.name) || in.name == "Y" ||
        in.name == "idx" || in.name == "item" ||
        (in.name.size() > 1 && in.name[0] == 'd' && isdigit(in.name[1])))
      fail(ErrorKind::Usage, "elementwise '{}': input name '{}' is not a usable identifier", layer,
           in.name);
    if (!names.insert(in.name).second)
      fail(ErrorKind::Usage, "elementwise '{}': input name '{}' given twice", layer, in.name);
    if (in.shape.size() > rank)
      fail(ErrorKind::Usage,
           "elementwise '{}': input '{}' {} has more dimensions than the output {}", layer, in.name,
           shapeString(in.shape), shapeString(outShape));
    std::vector<int64_t> st(rank, 0);
    int64_t stride = 1;
    for (size_t i = 0; i < in.shape.size(); ++i) {
      size_t id = in.shape.size() - 1 - i, od = rank - 1 - i;
      if (in.shape[id] != outShape[od] && in.shape[id] != 1)
        fail(ErrorKind::Usage,
             "elementwise '{}': input '{}' {} does not broadcast to the output {}", layer, in.name,
             shapeString(in.shape), shapeString(outShape));
      st[od] = in.shape[id] == 1 ? 0 : stride;
      stride *= in.shape[id];
    }
    strides.push_back(std::move(st));
  }

  GeneratedKernel k;
  k.name = kernelIdentifier(layer);
  int64_t perItem = ceilDiv(std::max<int64_t>(total, 1), params.itemsPerThread);
  k.range.dims = 1;
  k.range.global = {size_t(roundUp(perItem, params.wgSize)), 1, 1};
  k.range.local = {size_t(params.wgSize), 1, 1};

  // Which output coordinates some input needs (a full-shape input reads at idx directly).
  std::vector<bool> needDim(rank, false);
  std::vector<std::string> offsets;
  int64_t dimStride = 1;
  std::vector<int64_t> outStrides(rank, 1);
  for (size_t d = rank; d-- > 0;) {
    outStrides[d] = dimStride;
    dimStride *= outShape[d];
  }
  for (const std::vector<int64_t>& st : strides) {
    if (st == outStrides) {
      offsets.push_back("idx");
      continue;
    }
    std::string off;
    for (size_t d = 0; d < rank; ++d) {
      if (st[d] == 0 || outShape[d] == 1) continue;
      needDim[d] = true;
      std::string term = st[d] == 1 ? fmt::format("d{}", d) : fmt::format("d{} * {}", d, st[d]);
      off += off.empty() ? term : " + " + term;
    }
    offsets.push_back(off.empty() ? "0" : off);
  }

  CodeWriter w;
  w.line("// Layer: {} (elementwise{}), {}", escape::comment(layer),
         chain.statements.empty() ? "" : fmt::format(", {} ops fused", chain.statements.size()),
         chain.outType == "float" ? "f32" : chain.outType);
  w.line("//   Y{} = {}", shapeString(outShape),
         escape::comment(chain.description.empty() ? body : chain.description, 1000));
  for (size_t i = 0; i < inputs.size(); ++i)
    w.line("//   {}{}{}{}", inputs[i].name, shapeString(inputs[i].shape),
           inputs[i].type == "float" ? "" : " " + inputs[i].type,
           offsets[i] == "idx" ? "" : " (broadcast)");
  w.line("// Parameters: {}; 1-D launch {}.", params.toString(), k.range.toString());
  std::vector<std::string> decls;
  for (const ElementwiseInput& in : inputs) {
    decls.push_back(fmt::format("__global const {}* restrict {}_data", in.type, in.name));
    k.params.push_back(in.name + "_data");
  }
  decls.push_back(fmt::format("__global {}* restrict Y", chain.outType));
  k.params.push_back("Y");
  w.line("__kernel __attribute__((reqd_work_group_size({}, 1, 1)))", params.wgSize);
  std::string head = fmt::format("void {}(", k.name);
  w.open("{}{})", head, joinParams(decls, int(head.size())));
  w.open("for (int item = 0; item < {}; ++item)", params.itemsPerThread);
  w.line("const int idx = get_global_id(0) + item * get_global_size(0);");
  w.line("if (idx >= {}) return;", total);
  // Coordinates of idx in the output, only those a broadcast input needs.
  for (size_t d = 0; d < rank; ++d) {
    if (!needDim[d]) continue;
    std::string e = outStrides[d] == 1 ? "idx" : fmt::format("idx / {}", outStrides[d]);
    if (d > 0) e = fmt::format("({}) % {}", e, outShape[d]);
    if (d > 0 && outStrides[d] == 1) e = fmt::format("idx % {}", outShape[d]);
    w.line("const int d{} = {};", d, e);
  }
  for (size_t i = 0; i < inputs.size(); ++i)
    w.line("const {} {} = {}_data[{}];", inputs[i].type, inputs[i].name, inputs[i].name,
           offsets[i]);
  for (const std::string& st : chain.statements)
    w.line("{}", st);
  w.line("Y[idx] = {};", body);
  w.close();
  w.close();
  k.source = w.str();
  return k;
}

} // namespace triad::gpu
