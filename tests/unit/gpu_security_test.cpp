// The GPU target and untrusted input (ir/Escape.h, ir/TrustedFile.h): a model's names never
// become OpenCL C (newlines, preprocessor directives, comment terminators, line splices, names
// that legalise alike, 4 KiB names end up as escaped comments and distinct kernel identifiers,
// and the program still compiles with -Werror and computes what the interpreter does where an
// OpenCL device exists), and the program-binary cache loads only its own private files.
#include "GraphBuild.h"
#include "gpu/BinaryCache.h"
#include "gpu/GpuCodeGen.h"
#include "gpu/GpuTarget.h"
#include "gpu/KernelGen.h"
#include "gpu_TestUtil.h"
#include "ir/Escape.h"
#include "ir/Interpreter.h"
#include "ir/ops/Linear.h"

#include <cmath>
#include <filesystem>
#include <gtest/gtest.h>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

using namespace triad;
using namespace triad::ir;
using testutil::add;
using testutil::attrs;
using testutil::randomTensor;
namespace fs = std::filesystem;

namespace {

using gputest::noDeviceReason;

/// Names that would be code if formatted by hand, names that legalise alike, names that are
/// OpenCL built-ins, macros or Triad helpers, and a 4 KiB name.
std::vector<std::string> hostileNames() {
  return {"a\n#error x",
          "*/ #error y /*",
          "a/b",
          "a.b",
          std::string(4096, 'n'),
          std::string(4000, 'n') + "\n#error long",
          "c\\\n#error splice",
          "d\r#error cr",
          "?\?/\n#error trigraph",
          std::string("\xff\xfe\n#error bytes", 15),
          "dup",
          "dup",
          "tanh",
          "TILE_M",
          "triad_work_group_sum",
          "e_im2col",
          "e",
          "get_global_id",
          "kernel",
          "x_data",
          ""};
}

/// x[4, 8] through a chain of elementwise nodes, one per hostile name, then a Gemm and a MatMul
/// (anchored generators) with hostile names on the nodes, the constants, the graph and the
/// outputs.
Graph hostileGraph() {
  std::mt19937 rng(7);
  Graph g;
  g.name = "model */\n#error graph\n/*";
  Value* x = g.addInput("x\n#error input", {DType::F32, {4, 8}, {}});
  Value* cur = x;
  const OpKind kinds[] = {OpKind::Relu, OpKind::Sigmoid, OpKind::Neg, OpKind::Abs, OpKind::Tanh};
  std::vector<std::string> names = hostileNames();
  for (size_t i = 0; i < names.size(); ++i)
    cur = add(g, kinds[i % 5], names[i], {cur})->output(0);
  // Inputs of elementwise nodes whose names legalise alike, and one whose variable would be the
  // other's "<variable>_data" parameter.
  Value* y = g.addInput("x/data", {DType::F32, {4, 8}, {}});
  Value* z = g.addInput("x.data", {DType::F32, {4, 8}, {}});
  Value* q = g.addInput("q", {DType::F32, {4, 8}, {}});
  Value* qd = g.addInput("q_data", {DType::F32, {4, 8}, {}});
  Value* s = add(g, OpKind::Add, "*/\n#error add", {y, z})->output(0);
  s = add(g, OpKind::Mul, "x", {cur, s})->output(0);
  Value* t = add(g, OpKind::Add, "q+q_data", {qd, q})->output(0);
  s = add(g, OpKind::Sub, "x-q", {s, t})->output(0);
  Value* w = g.addConstant("w\n#error weight", randomTensor({8, 5}, rng));
  Value* bias = g.addConstant("*/ bias", randomTensor({5}, rng));
  Node* gemm =
      add(g, OpKind::Gemm, "*/ #error gemm /*", {s, w, bias}, std::make_shared<GemmAttrs>());
  Node* relu = add(g, OpKind::Relu, "gemm\n#error epilogue", {gemm->output(0)});
  Value* m = g.addConstant("m/m", randomTensor({5, 3}, rng));
  Node* mm = add(g, OpKind::MatMul, "m.m", {relu->output(0), m});
  g.renameValue(mm->output(0), "out\n#error output");
  g.addOutput(mm->output(0));
  g.addOutput(cur);
  return g;
}

std::vector<Tensor> hostileInputs() {
  std::mt19937 rng(8);
  std::vector<Tensor> in;
  for (int i = 0; i < 5; ++i)
    in.push_back(randomTensor({4, 8}, rng));
  return in;
}

/// The generated program has no line a model's name made: every preprocessor line is one of
/// Triad's, no block comment opens or closes, lines are short; the kernel names are distinct
/// identifiers of at most 64 characters, each defined once.
void expectSafeSource(const gpu::GpuProgram& p, std::optional<size_t> expectedKernels) {
  const std::string& src = p.source;
  std::istringstream in(src);
  size_t lineNo = 0;
  for (std::string line; std::getline(in, line);) {
    ++lineNo;
    std::string_view l = line;
    l.remove_prefix(std::min(l.find_first_not_of(" \t"), l.size()));
    EXPECT_NE(l.substr(0, 6), "#error") << "line " << lineNo << ": " << line;
    if (!l.empty() && l[0] == '#') {
      bool ours = false;
      for (std::string_view d : {"#define ", "#undef ", "#ifndef ", "#endif", "#pragma OPENCL "})
        ours = ours || l.substr(0, d.size()) == d;
      EXPECT_TRUE(ours) << "line " << lineNo << ": " << line;
    }
    EXPECT_LE(line.size(), 600u) << "line " << lineNo;
    EXPECT_EQ(line.find('\r'), std::string::npos) << "line " << lineNo;
    EXPECT_NE(line.empty() ? ' ' : line.back(), '\\') << "line " << lineNo << ": a splice";
    for (unsigned char c : line)
      EXPECT_TRUE(c == '\t' || (c >= 0x20 && c < 0x7f)) << "line " << lineNo << ": byte " << int(c);
  }
  EXPECT_EQ(src.find("/*"), std::string::npos);
  EXPECT_EQ(src.find("*/"), std::string::npos);
  EXPECT_EQ(src.find("?\?/"), std::string::npos); // a trigraph: a splice

  std::set<std::string> kernels;
  for (const gpu::GpuStep& s : p.steps) {
    if (s.kernel.empty()) continue;
    SCOPED_TRACE(s.kernel);
    EXPECT_TRUE(kernels.insert(s.kernel).second) << "kernel name used twice";
    EXPECT_LE(s.kernel.size(), escape::kMaxIdentifier);
    EXPECT_EQ(s.kernel.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                         "0123456789_"),
              std::string::npos);
    EXPECT_FALSE(s.kernel[0] >= '0' && s.kernel[0] <= '9');
    EXPECT_EQ(gpu::kernelIdentifier(s.kernel), s.kernel);
    std::string def = "void " + s.kernel + "(";
    size_t at = src.find(def);
    ASSERT_NE(at, std::string::npos);
    EXPECT_EQ(src.find(def, at + 1), std::string::npos) << "defined twice";
  }
  if (expectedKernels) {
    EXPECT_EQ(kernels.size(), *expectedKernels);
  }
  EXPECT_EQ(p.hostSteps, 0u);
}

TEST(GpuSecurity, HostileNamesNeverBecomeCode) {
  Graph g = hostileGraph();
  for (bool fuse : {false, true}) {
    SCOPED_TRACE(fuse ? "fused" : "one kernel per node");
    gpu::GpuCodeGenOptions o;
    o.fuse = fuse;
    gpu::GpuProgram p = gpu::generateOpenCL(g, o);
    // Unfused: every node is a kernel.
    expectSafeSource(p, fuse ? std::nullopt : std::optional<size_t>(g.nodes().size()));
    // The names are there, as comments.
    EXPECT_NE(p.source.find(escape::comment("model */\n#error graph\n/*")), std::string::npos);
    EXPECT_NE(p.source.find(escape::comment("x\n#error input")), std::string::npos);
    EXPECT_NE(p.source.find(escape::comment("out\n#error output")), std::string::npos);
    EXPECT_NE(p.source.find(escape::comment("*/ #error gemm /*")), std::string::npos);
    if (!fuse) {
      std::set<std::string> kernels;
      for (const gpu::GpuStep& s : p.steps)
        kernels.insert(s.kernel);
      EXPECT_TRUE(kernels.count("a_b") && kernels.count("a_b_2")) << "a/b and a.b";
      EXPECT_TRUE(kernels.count("dup") && kernels.count("dup_2"));
      EXPECT_TRUE(kernels.count("k_tanh") && kernels.count("k_TILE_M"));
      EXPECT_TRUE(kernels.count("k_triad_work_group_sum") && kernels.count("k_get_global_id"));
      EXPECT_TRUE(kernels.count("e_im2col_k") && kernels.count("e"));
      // q_data's variable is v_q_data, so q's is not v_q (its parameter would be v_q_data).
      EXPECT_NE(p.source.find("v_q_data_data"), std::string::npos);
      EXPECT_NE(p.source.find("v_q_2_data"), std::string::npos);
      EXPECT_NE(p.source.find("v_x_data_2_data"), std::string::npos) << "x/data and x.data";
    }
  }
}

TEST(GpuSecurity, HostileNamesCompileAndRun) {
  if (!noDeviceReason().empty()) GTEST_SKIP() << "no OpenCL device: " << noDeviceReason();
  Graph g = hostileGraph();
  std::vector<Tensor> in = hostileInputs();
  std::vector<Tensor> want = Interpreter(g).run(in);
  for (bool fuse : {false, true}) {
    SCOPED_TRACE(fuse ? "fused" : "one kernel per node");
    gpu::GpuOptions o = gputest::targetOptions();
    o.fuse = fuse;
    auto exe = gpu::makeGpuTarget(o)->compile(g);
    std::vector<Tensor> got = exe->run(in);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
      for (int64_t k = 0; k < got[i].numElements(); ++k)
        ASSERT_NEAR(got[i].getDouble(k), want[i].getDouble(k),
                    1e-5 + 1e-4 * std::fabs(want[i].getDouble(k)))
            << "output " << i << " element " << k;
  }
}

TEST(GpuSecurity, KernelIdentifiers) {
  for (const std::string& name : hostileNames()) {
    std::string id = gpu::kernelIdentifier(name);
    SCOPED_TRACE(escape::printable(name.substr(0, 40)));
    EXPECT_LE(id.size(), escape::kMaxIdentifier);
    EXPECT_EQ(id, escape::identifier(id, escape::Lang::OpenCL)) << "a legal identifier";
    EXPECT_EQ(gpu::kernelIdentifier(id), id) << "stable";
  }
  EXPECT_EQ(gpu::kernelIdentifier("/layer1/Conv"), "layer1_Conv");
  EXPECT_EQ(gpu::kernelIdentifier("floor"), "k_floor");
  EXPECT_EQ(gpu::kernelIdentifier("CLK_LOCAL_MEM_FENCE"), "k_CLK_LOCAL_MEM_FENCE");
  EXPECT_EQ(gpu::kernelIdentifier("resize/s0"), "resize_s0_k"); // not a resize kernel's table
  EXPECT_EQ(gpu::kernelIdentifier("compress_sel"), "compress_sel_k");
  EXPECT_EQ(gpu::kernelIdentifier("x_s"), "x_s");
  // The program's name in the binary cache's file name: no separator, no dot.
  gpu::BinaryCache cache("/tmp/c");
  fs::path p = cache.pathFor("../../a/b\n.so", "key");
  EXPECT_EQ(p.parent_path(), fs::path("/tmp/c"));
  EXPECT_EQ(p.filename().string().find_first_of("/\n"), std::string::npos);
  EXPECT_EQ(p.filename().string().rfind("a_b_so-", 0), 0u) << p;
}

// --- The program-binary cache trusts only its own private files -------------------------------

fs::path freshDir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / fmt::format("triad-gpu-security-{}-{}", name, getpid());
  fs::remove_all(d);
  return d;
}

unsigned modeOf(const fs::path& p) {
  struct stat st;
  EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
  return unsigned(st.st_mode & 07777);
}

TEST(GpuSecurity, BinaryCacheIsPrivate) {
  fs::path root = freshDir("private");
  fs::path dir = root / "opencl" / "sub";
  gpu::BinaryCache cache(dir);
  std::string key = gpu::BinaryCache::makeKey("src", "-O2", "dev", "1.0", "plat");
  std::string why;
  ASSERT_TRUE(cache.store("prog", key, "BINARY", &why)) << why;
  // Every folder it created is 0700, the entry 0600, whatever the umask.
  EXPECT_EQ(modeOf(root), 0700u);
  EXPECT_EQ(modeOf(root / "opencl"), 0700u);
  EXPECT_EQ(modeOf(dir), 0700u);
  EXPECT_EQ(modeOf(cache.pathFor("prog", key)), 0600u);
  gpu::BinaryCache::LoadResult r = cache.load("prog", key);
  ASSERT_EQ(r.status, gpu::BinaryCache::LoadStatus::Hit) << r.why;
  EXPECT_EQ(r.binary, "BINARY");
  fs::remove_all(root);
}

TEST(GpuSecurity, BinaryCacheRefusesEntriesOthersCanWrite) {
  fs::path dir = freshDir("entries");
  gpu::BinaryCache cache(dir);
  std::string key = gpu::BinaryCache::makeKey("src", "", "dev", "1.0", "plat");
  ASSERT_TRUE(cache.store("prog", key, "BINARY"));
  fs::path entry = cache.pathFor("prog", key);

  // World- or group-writable: never loaded, and rewritten (atomically, 0600) by the next store.
  for (unsigned mode : {0666u, 0620u}) {
    SCOPED_TRACE(mode);
    ASSERT_EQ(::chmod(entry.c_str(), mode), 0);
    gpu::BinaryCache::LoadResult r = cache.load("prog", key);
    EXPECT_EQ(r.status, gpu::BinaryCache::LoadStatus::Untrusted);
    EXPECT_NE(r.why.find("writable"), std::string::npos) << r.why;
    EXPECT_TRUE(r.binary.empty());
    ASSERT_TRUE(cache.store("prog", key, "REBUILT"));
    EXPECT_EQ(modeOf(entry), 0600u);
    r = cache.load("prog", key);
    ASSERT_EQ(r.status, gpu::BinaryCache::LoadStatus::Hit) << r.why;
    EXPECT_EQ(r.binary, "REBUILT");
  }

  // A symbolic link to a valid entry is not an entry.
  fs::path elsewhere = dir / "elsewhere.bin";
  fs::rename(entry, elsewhere);
  fs::create_symlink(elsewhere, entry);
  EXPECT_EQ(cache.load("prog", key).status, gpu::BinaryCache::LoadStatus::Untrusted);
  fs::remove(entry);

  // An entry of another user (only root can make one).
  if (::geteuid() == 0) {
    ASSERT_TRUE(cache.store("prog", key, "BINARY"));
    ASSERT_EQ(::chown(entry.c_str(), 65534, 65534), 0);
    gpu::BinaryCache::LoadResult r = cache.load("prog", key);
    EXPECT_EQ(r.status, gpu::BinaryCache::LoadStatus::Untrusted);
    EXPECT_NE(r.why.find("owned by uid 65534"), std::string::npos) << r.why;
  }
  fs::remove_all(dir);
}

TEST(GpuSecurity, BinaryCacheRefusesAFolderOthersCanWrite) {
  fs::path dir = freshDir("folder");
  gpu::BinaryCache cache(dir);
  std::string key = gpu::BinaryCache::makeKey("src", "", "dev", "1.0", "plat");
  ASSERT_TRUE(cache.store("prog", key, "BINARY"));
  ASSERT_EQ(::chmod(dir.c_str(), 0770), 0);
  // The entry is the user's own and private, but someone else may have put it there.
  gpu::BinaryCache::LoadResult r = cache.load("prog", key);
  EXPECT_EQ(r.status, gpu::BinaryCache::LoadStatus::Untrusted);
  EXPECT_NE(r.why.find("folder"), std::string::npos) << r.why;
  // Nothing is written there either, and the folder is left as it is.
  std::string why;
  EXPECT_FALSE(cache.store("prog", key, "BINARY", &why));
  EXPECT_NE(why.find("writable"), std::string::npos) << why;
  EXPECT_EQ(modeOf(dir), 0770u);
  fs::remove_all(dir);
}

} // namespace
