// ir/TrustedFile.h: which cached files Triad may load back (the user's own, private, in a
// folder only the user can write) and the private folders its caches create.
#include "ir/Diagnostics.h"
#include "ir/Files.h"
#include "ir/TrustedFile.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace triad;
namespace fs = std::filesystem;

namespace {

fs::path freshDir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / fmt::format("triad-trusted-{}-{}", name, getpid());
  fs::remove_all(d);
  return d;
}

unsigned modeOf(const fs::path& p) {
  struct stat st;
  EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
  return unsigned(st.st_mode & 07777);
}

void writeFile(const fs::path& p, const std::string& text, unsigned mode) {
  std::ofstream(p) << text;
  ASSERT_EQ(::chmod(p.c_str(), mode), 0) << p;
}

TEST(TrustedFile, MakePrivateDirCreatesEveryFolder0700) {
  fs::path root = freshDir("mkdir");
  fs::path dir = root / "a" / "b";
  std::string why;
  EXPECT_TRUE(makePrivateDir(dir, "the test cache", &why)) << why;
  EXPECT_EQ(modeOf(root), 0700u);
  EXPECT_EQ(modeOf(root / "a"), 0700u);
  EXPECT_EQ(modeOf(dir), 0700u);
  EXPECT_TRUE(trustedDir(dir));
  // Existing folders are left as they are: a private one is trusted, a shared one is not.
  ASSERT_EQ(::chmod(dir.c_str(), 0755), 0);
  EXPECT_TRUE(makePrivateDir(dir));
  EXPECT_EQ(modeOf(dir), 0755u);
  ASSERT_EQ(::chmod(dir.c_str(), 0775), 0);
  EXPECT_FALSE(makePrivateDir(dir, "the test cache", &why));
  EXPECT_NE(why.find("writable by its group"), std::string::npos) << why;
  EXPECT_EQ(modeOf(dir), 0775u);
  ASSERT_EQ(::chmod(dir.c_str(), 0757), 0);
  EXPECT_FALSE(makePrivateDir(dir, "the test cache", &why));
  EXPECT_NE(why.find("writable by others"), std::string::npos) << why;
  // A file in the way is an error naming what was to be created.
  writeFile(root / "file", "x", 0600);
  try {
    makePrivateDir(root / "file" / "sub", "the test cache");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Io);
    EXPECT_NE(std::string(e.what()).find("the test cache"), std::string::npos) << e.what();
  }
  EXPECT_THROW(makePrivateDir(root / "file"), Error);
  fs::remove_all(root);
}

TEST(TrustedFile, OwnPrivateFileIsAccepted) {
  fs::path dir = freshDir("own");
  ASSERT_TRUE(makePrivateDir(dir));
  fs::path f = dir / "entry.bin";
  writeFile(f, "payload", 0600);
  std::string why;
  EXPECT_TRUE(trustedForLoading(f, &why)) << why;
  std::string bytes;
  EXPECT_EQ(readTrustedFile(f, &bytes, &why), TrustedRead::Ok) << why;
  EXPECT_EQ(bytes, "payload");
  ASSERT_EQ(::chmod(f.c_str(), 0644), 0); // readable by others is fine: only writing matters
  EXPECT_TRUE(trustedForLoading(f, &why)) << why;
  // makePrivateFile makes a file 0600 whatever it was.
  ASSERT_EQ(::chmod(f.c_str(), 0666), 0);
  makePrivateFile(f);
  EXPECT_EQ(modeOf(f), 0600u);
  EXPECT_TRUE(trustedForLoading(f));
  fs::remove_all(dir);
}

TEST(TrustedFile, FilesOthersCanWriteAreRefused) {
  fs::path dir = freshDir("writable");
  ASSERT_TRUE(makePrivateDir(dir));
  fs::path f = dir / "entry.bin";
  for (unsigned mode : {0666u, 0664u, 0620u, 0602u}) {
    SCOPED_TRACE(fmt::format("{:o}", mode));
    writeFile(f, "payload", mode);
    std::string why, bytes = "unchanged";
    EXPECT_FALSE(trustedForLoading(f, &why));
    EXPECT_NE(why.find("writable"), std::string::npos) << why;
    EXPECT_EQ(readTrustedFile(f, &bytes, &why), TrustedRead::Untrusted);
    EXPECT_EQ(bytes, "unchanged") << "nothing read";
  }
  fs::remove_all(dir);
}

TEST(TrustedFile, FoldersOthersCanWriteAreRefused) {
  fs::path dir = freshDir("folder");
  ASSERT_TRUE(makePrivateDir(dir));
  fs::path f = dir / "entry.bin";
  writeFile(f, "payload", 0600);
  for (unsigned mode : {0770u, 0777u, 01777u}) { // sticky or not
    SCOPED_TRACE(fmt::format("{:o}", mode));
    ASSERT_EQ(::chmod(dir.c_str(), mode), 0);
    std::string why, bytes;
    EXPECT_FALSE(trustedDir(dir, &why));
    EXPECT_FALSE(trustedForLoading(f, &why));
    EXPECT_NE(why.find("folder"), std::string::npos) << why;
    EXPECT_EQ(readTrustedFile(f, &bytes, &why), TrustedRead::Untrusted);
  }
  ASSERT_EQ(::chmod(dir.c_str(), 0700), 0);
  EXPECT_TRUE(trustedForLoading(f));
  fs::remove_all(dir);
}

TEST(TrustedFile, LinksOtherFilesAndMissingFiles) {
  fs::path dir = freshDir("links");
  ASSERT_TRUE(makePrivateDir(dir));
  fs::path target = dir / "target.bin", link = dir / "link.bin";
  writeFile(target, "payload", 0600);
  fs::create_symlink(target, link);
  std::string why, bytes;
  EXPECT_FALSE(trustedForLoading(link, &why));
  EXPECT_NE(why.find("symbolic link"), std::string::npos) << why;
  EXPECT_EQ(readTrustedFile(link, &bytes, &why), TrustedRead::Untrusted);
  // Not a regular file.
  fs::create_directory(dir / "sub");
  EXPECT_FALSE(trustedForLoading(dir / "sub"));
  EXPECT_EQ(readTrustedFile(dir / "sub", &bytes), TrustedRead::Untrusted);
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  EXPECT_FALSE(trustedForLoading(dir / "fifo"));
  EXPECT_EQ(readTrustedFile(dir / "fifo", &bytes), TrustedRead::Untrusted); // does not block
  // Missing.
  EXPECT_FALSE(trustedForLoading(dir / "missing", &why));
  EXPECT_EQ(readTrustedFile(dir / "missing", &bytes), TrustedRead::Missing);
  EXPECT_FALSE(trustedDir(dir / "missing"));
  // Another user's file or folder (only root can make one).
  if (::geteuid() == 0) {
    ASSERT_EQ(::chown(target.c_str(), 65534, 65534), 0);
    EXPECT_FALSE(trustedForLoading(target, &why));
    EXPECT_NE(why.find("owned by uid 65534"), std::string::npos) << why;
    EXPECT_EQ(readTrustedFile(target, &bytes), TrustedRead::Untrusted);
    ASSERT_EQ(::chown(target.c_str(), 0, 0), 0);
    EXPECT_TRUE(trustedForLoading(target));
    ASSERT_EQ(::chown(dir.c_str(), 65534, 65534), 0);
    EXPECT_FALSE(trustedForLoading(target, &why));
    EXPECT_NE(why.find("folder"), std::string::npos) << why;
    EXPECT_FALSE(makePrivateDir(dir));
  }
  fs::remove_all(dir);
}

} // namespace

// A cache root is only as safe as the folders above it: one that others can write without the
// sticky bit lets them rename the root away and put their own in its place.
TEST(TrustedFile, AncestorsOthersCanWriteAreRefusedUnlessSticky) {
  fs::path top = freshDir("ancestors");
  fs::path root = top / "shared" / "cpu";
  ASSERT_TRUE(makePrivateDir(root));
  EXPECT_TRUE(trustedAncestors(root)); // /tmp is sticky, the rest 0700
  ASSERT_EQ(::chmod((top / "shared").c_str(), 0777), 0);
  std::string why;
  EXPECT_FALSE(trustedAncestors(root, &why));
  EXPECT_NE(why.find("shared"), std::string::npos) << why;
  EXPECT_NE(why.find("writable by others"), std::string::npos) << why;
  ASSERT_EQ(::chmod((top / "shared").c_str(), 01777), 0); // like /tmp
  EXPECT_TRUE(trustedAncestors(root, &why)) << why;
  // The cache refuses such a root with the reason, before it loads or builds anything.
  ASSERT_EQ(::chmod((top / "shared").c_str(), 0777), 0);
  try {
    getOrBuildCacheEntry(root, "k", {"x"}, "the test cache", [](const fs::path&) {});
    ADD_FAILURE() << "an untrusted cache root was used";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Io);
    EXPECT_NE(std::string(e.what()).find("is not trusted"), std::string::npos) << e.what();
  }
  fs::remove_all(top);
}
