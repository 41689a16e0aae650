// triad bench's pieces: SHA-256 against the FIPS vectors, latency statistics, accuracy,
// RAPL readings (wraparound) from a fake powercap tree, batch cutting and seeded random rows,
// and the worker processes (answers, a crash, a time-out).
#include "bench/Data.h"
#include "bench/Energy.h"
#include "bench/Process.h"
#include "bench/Sha256.h"
#include "bench/Stats.h"

#include <csignal>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <thread>
#include <unistd.h>

namespace triad::bench {
namespace {

namespace fs = std::filesystem;

TEST(BenchSha256, FipsVectors) {
  EXPECT_EQ(sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // 55, 56 and 64 bytes: the padding's one-block / two-block boundary.
  EXPECT_EQ(sha256Hex(std::string(55, 'a')),
            "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
  EXPECT_EQ(sha256Hex(std::string(56, 'a')),
            "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
  EXPECT_EQ(sha256Hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(BenchStats, LatencyQuantiles) {
  nlohmann::json j = latencyJson({5, 1, 4, 2, 3});
  EXPECT_EQ(j["count"], 5);
  EXPECT_DOUBLE_EQ(j["mean"].get<double>(), 3);
  EXPECT_DOUBLE_EQ(j["p50"].get<double>(), 3);
  EXPECT_DOUBLE_EQ(j["p90"].get<double>(), 4.6);
  EXPECT_DOUBLE_EQ(j["min"].get<double>(), 1);
  EXPECT_DOUBLE_EQ(j["max"].get<double>(), 5);
  EXPECT_EQ(j["samples"], nlohmann::json({5, 1, 4, 2, 3})); // in the order taken
  EXPECT_TRUE(latencyJson({})["p50"].is_null());
}

TEST(BenchStats, AccuracyAndTop1) {
  ir::Tensor ref = ir::Tensor::fromVector<float>({2, 3}, {0.1f, 0.7f, 0.2f, 0.5f, 0.3f, 0.2f});
  ir::Tensor got = ir::Tensor::fromVector<float>({2, 3}, {0.1f, 0.6f, 0.3f, 0.2f, 0.6f, 0.2f});
  Accuracy a = compareOutputs(got, ref);
  EXPECT_NEAR(a.maxAbsErr, 0.3, 1e-6);
  EXPECT_NEAR(a.maxRelErr, 1.0, 1e-6); // 0.3 / 0.3
  ir::Tensor labels = ir::Tensor::fromVector<int64_t>({2}, {1, 0});
  std::string why;
  EXPECT_DOUBLE_EQ(*top1(ref, labels, &why), 1.0);
  EXPECT_DOUBLE_EQ(*top1(got, labels, &why), 0.5);
  EXPECT_FALSE(top1(ir::Tensor::fromVector<float>({6}, std::vector<float>(6)), labels, &why));
  EXPECT_NE(why.find("rank 1"), std::string::npos);
  EXPECT_THROW(compareOutputs(labels, ref), Error);
}

TEST(BenchEnergy, RaplFromAFakeTreeWithWraparound) {
  fs::path root = fs::temp_directory_path() / fmt::format("triad-rapl-{}", getpid());
  fs::remove_all(root);
  auto zone = [&](const std::string& z, const std::string& name, uint64_t uj, uint64_t range) {
    fs::create_directories(root / z);
    std::ofstream(root / z / "name") << name << "\n";
    std::ofstream(root / z / "energy_uj") << uj << "\n";
    std::ofstream(root / z / "max_energy_range_uj") << range << "\n";
  };
  zone("intel-rapl:0", "package-0", 900, 1000);
  zone("intel-rapl:0:0", "core", 5, 1000); // a sub-zone: not counted
  zone("intel-rapl:1", "psys", 7, 1000);   // not a package: not counted
  Rapl rapl(root);
  ASSERT_TRUE(rapl.available()) << rapl.why();
  RaplSample a = *rapl.read();
  std::ofstream(root / "intel-rapl:0" / "energy_uj") << 100 << "\n"; // wrapped: 900 -> 1000 -> 100
  RaplSample b = *rapl.read();
  EXPECT_NEAR(Rapl::joules(a, b), 200e-6, 1e-12);
  fs::remove_all(root);
  Rapl none(root);
  EXPECT_FALSE(none.available());
  EXPECT_NE(none.why().find("absent"), std::string::npos);
}

TEST(BenchEnergy, NvmlSaysWhyWhenAbsent) {
  Nvml nvml("no such device name");
  if (nvml.available()) GTEST_SKIP() << "an NVIDIA device matched";
  EXPECT_FALSE(nvml.millijoules());
  EXPECT_NE(nvml.why().find("NVML"), std::string::npos) << nvml.why();
}

TEST(BenchData, BatchesPadAndRandomRowsAreStable) {
  ir::Tensor x = ir::Tensor::fromVector<float>({3, 2}, {0, 1, 10, 11, 20, 21});
  ir::Tensor cyc = takeRows(x, 2, 3, false); // rows 2, 0, 1
  EXPECT_EQ(cyc.values<float>()[0], 20);
  EXPECT_EQ(cyc.values<float>()[2], 0);
  ir::Tensor pad = takeRows(x, 2, 3, true); // rows 2, 2, 2
  EXPECT_EQ(pad.values<float>()[4], 20);
  ir::TensorType t{ir::DType::F32, {1, 4}, {}};
  ir::Tensor whole = randomRows(t, 0, 6, 7, 0);
  ir::Tensor tail = randomRows(t, 4, 2, 7, 0);
  for (int k = 0; k < 8; ++k)
    EXPECT_EQ(whole.values<float>()[16 + k], tail.values<float>()[k]);
  ir::Tensor acc;
  putRows(acc, 4, 2, takeRows(x, 0, 3, false), 2);
  EXPECT_EQ(acc.shape(), (ir::Shape{4, 2}));
  EXPECT_EQ(acc.values<float>()[6], 10);
}

TEST(BenchProcess, WorkersAnswerCrashAndTimeOut) {
  installInterruptHandlers();
  auto echo = Process::fork("echo", 10, [](int in, int out) {
    char buf[256];
    ssize_t n = read(in, buf, sizeof buf);
    std::string line = std::string("{\"got\":") + std::to_string(n > 0 ? n : 0) + "}\n";
    if (write(out, line.data(), line.size()) < 0) _exit(1);
    _exit(0);
  });
  auto r = echo->request({{"cmd", "run"}});
  ASSERT_TRUE(r) << echo->failure();
  EXPECT_GT((*r)["got"].get<int>(), 0);
  echo->quit();

  auto crash = Process::fork("crash", 10, [](int, int) { std::abort(); });
  EXPECT_FALSE(crash->receive());
  EXPECT_NE(crash->failure().find("SIGABRT"), std::string::npos) << crash->failure();

  auto slow = Process::fork(
      "slow", 0.3, [](int, int) { std::this_thread::sleep_for(std::chrono::seconds(30)); });
  pid_t pid = slow->pid();
  EXPECT_FALSE(slow->receive());
  EXPECT_EQ(slow->failure(), "timed out after 0.3 s");
  EXPECT_NE(kill(pid, 0), 0); // killed and reaped

  EXPECT_THROW(Process::spawn("missing", 1, {"/nonexistent/peer"}), Error);
}

} // namespace
} // namespace triad::bench
