// Files a pull request chose (the CI gate): only regular files inside the plan's folder are
// read, whatever links they hold; no device or other non-regular file is replaced by a write;
// foreign names reach every report escaped for its syntax.
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "files.hpp"
#include "helpers.hpp"
#include "trainledger/text.hpp"

namespace fs = std::filesystem;
using trainledger::test::run_cli;
using trainledger::test::source_path;

namespace {

// A fresh folder of its own per test.
fs::path fresh_dir(const std::string& tag) {
  std::string pattern = (fs::temp_directory_path() / ("trainledger-" + tag + "-XXXXXX")).string();
  REQUIRE(::mkdtemp(pattern.data()) != nullptr);
  return fs::path(pattern);
}

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

const char* const k_secret = "SECRET-TOKEN-8f1d";

// A config.json whose fields carry the secret where a reader would quote them.
std::string secret_config() {
  return std::string("{\"model_type\": \"") + k_secret + "\", \"hidden_size\": \"" + k_secret +
         "\"}";
}

const char* const k_llama_config = R"({"model_type": "llama", "hidden_size": 4096,
  "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
  "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 131072,
  "rms_norm_eps": 1e-05, "tie_word_embeddings": false})";

const char* const k_plan_rest = R"(
[training]
seq_len = 4096
micro_batch = 1
global_batch = 8
[parallel]
zero = "fsdp"
[cluster]
gpu = "h100-sxm5-80gb"
nodes = 1
)";

}  // namespace

TEST_CASE("a snapshot's config.json linked out of the plan's folder is not read",
          "[hostile][files]") {
  const fs::path root = fresh_dir("snapshot");
  const fs::path outside = root / "outside";
  const fs::path plans = root / "plans";
  write(outside / "config.json", secret_config());
  // A Hugging Face snapshot committed in the PR: config.json links out of the plan's folder.
  fs::create_directories(plans / "snap");
  fs::create_symlink(outside / "config.json", plans / "snap" / "config.json");
  write(plans / "plan.toml", std::string("[model]\nhf_config = \"snap\"\n") + k_plan_rest);
  const auto r = run_cli({"check", (plans / "plan.toml").string()});
  CHECK(r.code == 2);
  CHECK(r.err.find("out of its folder, by a symbolic link") != std::string::npos);
  CHECK(r.err.find(k_secret) == std::string::npos);
  CHECK(r.out.find(k_secret) == std::string::npos);

  SECTION("a relative link, and a linked snapshot directory, likewise") {
    fs::remove(plans / "snap" / "config.json");
    fs::create_symlink("../../outside/config.json", plans / "snap" / "config.json");
    auto again = run_cli({"plan", (plans / "plan.toml").string()});
    CHECK(again.code == 2);
    CHECK(again.err.find(k_secret) == std::string::npos);
    fs::remove_all(plans / "snap");
    fs::create_directory_symlink(outside, plans / "snap");
    again = run_cli({"plan", (plans / "plan.toml").string(), "--format", "json"});
    CHECK(again.code == 2);
    CHECK(again.err.find(k_secret) == std::string::npos);
    CHECK(again.out.empty());
  }
  fs::remove_all(root);
}

TEST_CASE("a snapshot whose links stay inside the plan's folder is read", "[hostile][files]") {
  // models--org--name/snapshots/REV/config.json → ../../blobs/HASH, all inside the folder.
  const fs::path root = fresh_dir("snapshot-ok");
  const fs::path model = root / "models--meta--llama";
  write(model / "blobs" / "abc123", k_llama_config);
  fs::create_directories(model / "snapshots" / "rev1");
  fs::create_symlink("../../blobs/abc123", model / "snapshots" / "rev1" / "config.json");
  write(root / "plan.toml",
        std::string("[model]\nhf_config = \"models--meta--llama/snapshots/rev1\"\n") + k_plan_rest);
  const auto r = run_cli({"check", (root / "plan.toml").string()});
  INFO(r.err);
  CHECK(r.code == 0);
  fs::remove_all(root);
}

TEST_CASE("the plan file itself, linked out of its folder, is not read", "[hostile][files]") {
  const fs::path root = fresh_dir("plan-link");
  write(root / "outside" / "secret.toml", std::string("[model]\npreset = \"") + k_secret + "\"\n");
  fs::create_directories(root / "plans");
  fs::create_symlink(root / "outside" / "secret.toml", root / "plans" / "p.toml");
  const auto r = run_cli({"check", (root / "plans" / "p.toml").string()});
  CHECK(r.code == 2);
  CHECK(r.err.find("out of its folder, by a symbolic link") != std::string::npos);
  CHECK(r.err.find(k_secret) == std::string::npos);
  // A link inside the folder is an ordinary plan.
  write(root / "plans" / "real.toml",
        "[model]\npreset = \"llama-3.1-8b\"\n" + std::string(k_plan_rest));
  fs::create_symlink("real.toml", root / "plans" / "alias.toml");
  const auto ok = run_cli({"check", (root / "plans" / "alias.toml").string()});
  INFO(ok.err);
  CHECK(ok.code == 0);
  fs::remove_all(root);
}

TEST_CASE("a name out of the plan's folder is refused alike whether or not the file exists",
          "[hostile][files]") {
  // A pull request must not learn which files exist on the CI machine from the errors.
  const fs::path root = fresh_dir("probe");
  write(root / "outside" / "exists.json", "{}");
  fs::create_directories(root / "outside" / "dir");
  fs::create_directories(root / "plans");
  const auto error_for = [&](const std::string& name) {
    write(root / "plans" / "p.toml", "[import]\ndeepspeed = \"" + name +
                                         "\"\n[model]\npreset = \"llama-3.1-8b\"\n" +
                                         std::string(k_plan_rest));
    const auto r = run_cli({"check", (root / "plans" / "p.toml").string()});
    CHECK(r.code == 2);
    std::string e = r.err;
    const auto at = e.find(name);
    REQUIRE(at != std::string::npos);
    return e.replace(at, name.size(), "NAME");
  };
  const std::string exists = error_for("../outside/exists.json");
  CHECK(exists.find("outside the plan's folder") != std::string::npos);
  CHECK(error_for("../outside/missing.json") == exists);
  CHECK(error_for("../outside/dir") == exists);
  CHECK(error_for("../outside/dir/missing.json") == exists);
  CHECK(error_for("/etc/passwd") == exists);
  CHECK(error_for("/no/such/folder/x.json") == exists);
  // Symbolic links in the folder that lead out of it, to a file or to nothing, alike.
  fs::create_symlink("../outside/exists.json", root / "plans" / "to-file.json");
  fs::create_symlink("../outside/missing.json", root / "plans" / "to-nothing.json");
  const std::string by_link = error_for("to-file.json");
  CHECK(by_link.find("outside the plan's folder") != std::string::npos);
  CHECK(error_for("to-nothing.json") == by_link);
  // Inside the folder, the specific reasons stay.
  CHECK(error_for("missing.json").find("no such file") != std::string::npos);
  fs::remove_all(root);
}

TEST_CASE("a FIFO or a device named as a plan or an import is refused at once",
          "[hostile][files]") {
  const fs::path root = fresh_dir("fifo");
  REQUIRE(::mkfifo((root / "p.toml").c_str(), 0600) == 0);
  const auto start = std::chrono::steady_clock::now();
  const auto r = run_cli({"check", (root / "p.toml").string()});
  CHECK(r.code == 2);
  CHECK(r.err.find("not a regular file") != std::string::npos);
  std::string why;
  CHECK_FALSE(trainledger::config::read_regular_file("/dev/zero", 1 << 20, why));
  CHECK(why == "not a regular file (a device, a FIFO or a socket)");
  write(root / "plan.toml", std::string("[model]\npreset = \"llama-3.1-8b\"\n[import]\n"
                                        "deepspeed = \"p.toml\"\n") +
                                k_plan_rest);
  const auto imp = run_cli({"check", (root / "plan.toml").string()});
  CHECK(imp.code == 2);
  CHECK(imp.err.find("not a regular file") != std::string::npos);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(20));
  fs::remove_all(root);
}

TEST_CASE("writing with -o never replaces a device, a FIFO, a directory or a link",
          "[hostile][files]") {
  const fs::path root = fresh_dir("write");
  const std::string log = source_path("tests/data/nccl-tests/a3mega-h100-2x8-all_reduce.txt");
  REQUIRE(::mkfifo((root / "fifo").c_str(), 0600) == 0);
  fs::create_directory(root / "dir");
  write(root / "target.toml", "keep");
  fs::create_symlink(root / "target.toml", root / "link.toml");
  for (const char* name : {"fifo", "dir", "link.toml"}) {
    const auto r = run_cli({"calibrate", "import", log, "-o", (root / name).string()});
    INFO(name << ": " << r.err);
    CHECK(r.code == 2);
    CHECK(r.err.find("cannot write") != std::string::npos);
  }
  CHECK(fs::is_fifo(fs::symlink_status(root / "fifo")));
  CHECK(fs::is_directory(fs::symlink_status(root / "dir")));
  CHECK(fs::is_symlink(fs::symlink_status(root / "link.toml")));
  CHECK(trainledger::test::read_file((root / "target.toml").string()) == "keep");
  // The lower layer refuses too (a target replaced after the options were checked).
  CHECK_THROWS_WITH(trainledger::config::write_file_atomically((root / "fifo").string(), "x"),
                    Catch::Contains("not a regular file"));
  if (::geteuid() == 0) {
    // As root (CI containers): a character device like /dev/null stays a device.
    const fs::path dev = root / "null";
    REQUIRE(::mknod(dev.c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0);
    const auto r = run_cli({"calibrate", "import", log, "-o", dev.string()});
    CHECK(r.code == 2);
    CHECK(fs::is_character_file(fs::symlink_status(dev)));
  }
  // A regular file is replaced, and nothing is left beside it.
  const auto ok = run_cli({"calibrate", "import", log, "-o", (root / "target.toml").string()});
  CHECK(ok.code == 0);
  CHECK(trainledger::test::read_file((root / "target.toml").string()).find("[profile]") !=
        std::string::npos);
  int files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(root)) ++files;
  CHECK(files == (::geteuid() == 0 ? 5 : 4));  // fifo, dir, target.toml, link.toml (, null)
  fs::remove_all(root);
}

TEST_CASE("foreign text: printable, XML, Markdown, TOML and shell forms", "[hostile][text]") {
  using namespace trainledger::text;
  CHECK(printable("a\nb\x1b[31m\x7f") == "a\\nb\\x1B[31m\\x7F");
  CHECK(printable("caf\xc3\xa9") == "caf\xc3\xa9");       // é kept
  CHECK(printable("\xff\xc0\xaf") == "\\xFF\\xC0\\xAF");  // invalid, overlong
  CHECK(printable("\xed\xa0\x80") == "\\xED\\xA0\\x80");  // a surrogate
  CHECK(printable("\xe2\x80\xae"
                  "abc") == "\\u{202E}abc");  // RIGHT-TO-LEFT OVERRIDE
  CHECK(printable("\xc2\x9b"
                  "31m") == "\\x9B31m");  // C1 CSI
  CHECK(printable(std::string(600, 'x')).size() == 512 + std::string("…").size());
  CHECK(is_printable("plans/a.toml"));
  CHECK_FALSE(is_printable("a\nb"));
  CHECK(valid_utf8("a\xff"
                   "b") ==
        "a\xef\xbf\xbd"
        "b");
  CHECK(xml("<a href='x'>&\x01\xef\xbf\xbf") ==
        "&lt;a href=&apos;x&apos;&gt;&amp;\xef\xbf\xbd\xef\xbf\xbd");
  CHECK(markdown("<script>alert(1)</script> *x* | y\n# h") ==
        "&lt;script&gt;alert(1)&lt;/script&gt; \\*x\\* \\| y\\\\n\\# h");
  CHECK(markdown_code("a`b") == "``a`b``");
  CHECK(markdown_code("`x") == "`` `x ``");
  CHECK(toml_string("a\"b\\c\nd\x01") == "a\\\"b\\\\c\\nd\\u0001");
  CHECK(shell_word("x'; rm -rf /\n'") == "'x'\\''; rm -rf /\\n'\\'''");
}

TEST_CASE("a hostile file name keeps every check report well-formed", "[hostile][text]") {
  const fs::path root = fresh_dir("names");
  const std::string plan = std::string("[model]\npreset = \"llama-3.1-8b\"\n") + k_plan_rest;
  // A newline that would start a workflow command, an escape sequence, a byte that is not
  // UTF-8, and U+FFFF (no XML character).
  const std::string name = "a\n::error::pwned\x1b[2J\xff\xef\xbf\xbf.toml";
  write(root / name, plan);
  const std::string path = (root / name).string();

  const auto json = run_cli({"check", path, "--format", "json"});
  INFO(json.err);
  CHECK(json.code == 0);
  const auto parsed = nlohmann::json::parse(json.out);  // throws when not valid UTF-8 JSON
  CHECK(parsed["plans"][0]["plan"].get<std::string>().find('\n') == std::string::npos);

  const auto junit = run_cli({"check", path, "--format", "junit"});
  CHECK(junit.code == 0);
  CHECK(junit.out.find("\xef\xbf\xbf") == std::string::npos);
  CHECK(junit.out.find('\x1b') == std::string::npos);
  CHECK(junit.out.find('\xff') == std::string::npos);

  const auto gh = run_cli({"check", path, "--format", "github"});
  CHECK(gh.code == 0);
  CHECK(gh.out.find("\n::error::pwned") == std::string::npos);
  CHECK(gh.out.find('\x1b') == std::string::npos);

  const auto table = run_cli({"check", path});
  CHECK(table.out.find('\x1b') == std::string::npos);
  CHECK(table.out.find("\\x1B[2J") != std::string::npos);  // shown, escaped

  // An invalid plan under that name: its errors too.
  write(root / name, "[model]\npreset = \"nope\"\n");
  const auto bad = run_cli({"check", path, "--format", "github"});
  CHECK(bad.code == 2);
  CHECK(bad.out.find("\n::error::pwned") == std::string::npos);
  CHECK(bad.err.find('\x1b') == std::string::npos);
  fs::remove_all(root);
}

TEST_CASE("model names reach Markdown, HTML and emitted configs as text", "[hostile][text]") {
  const fs::path root = fresh_dir("model-name");
  write(root / "p.toml",
        "[model]\npreset = \"llama-3.1-8b\"\nname = \"<script>x</script>\\n# head `x`\\n"
        "rm -rf /\"\n" +
            std::string(k_plan_rest));
  const std::string p = (root / "p.toml").string();
  const auto md = run_cli({"plan", p, "--format", "markdown"});
  INFO(md.err);
  REQUIRE(md.code == 0);
  CHECK(md.out.find("<script>") == std::string::npos);
  CHECK(md.out.find("\n# head") == std::string::npos);
  const auto html = run_cli({"plan", p, "--format", "html"});
  REQUIRE(html.code == 0);
  CHECK(html.out.find("<script>x") == std::string::npos);
  const auto meg = run_cli({"plan", p, "--emit", "megatron"});
  REQUIRE(meg.code == 0);
  CHECK(meg.out.find("\nrm -rf /") == std::string::npos);
  const auto titan = run_cli({"plan", p, "--emit", "torchtitan"});
  REQUIRE(titan.code == 0);
  CHECK(titan.out.find("\nrm -rf /") == std::string::npos);
  CHECK(titan.out.find("\n# head") == std::string::npos);
  fs::remove_all(root);
}

TEST_CASE("JSON logs and memory stats are bounded before they are parsed", "[hostile][files]") {
  // Under the size caps, millions of values would take seconds and gigabytes as a tree.
  const fs::path root = fresh_dir("json-bound");
  std::string many = "{\"results\": [0";
  many.reserve(16u << 20);
  while (many.size() < (15u << 20)) many += ",0";
  many += "]}";
  write(root / "log.json", many);
  const auto start = std::chrono::steady_clock::now();
  const auto log = run_cli({"calibrate", "import", (root / "log.json").string()});
  CHECK(log.code == 2);
  CHECK(log.err.find("more than 1,000,000 values") != std::string::npos);
  many.resize(3u << 20);
  many += "]}";
  write(root / "stats.json", many);
  const auto stats =
      run_cli({"calibrate", "compare", "--memory-stats", (root / "stats.json").string()});
  CHECK(stats.code == 2);
  CHECK(stats.err.find("more than 100,000 values") != std::string::npos);
  CHECK(stats.err.find("stats.json:1:") != std::string::npos);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
  fs::remove_all(root);
}

TEST_CASE("reports that list every stage stop at 1024 stages, check judges any pp",
          "[hostile][bounded]") {
  const fs::path root = fresh_dir("pp");
  write(root / "p.toml",
        "[model]\nlayers = 2048\nhidden = 1024\nheads = 16\nffn = 4096\n"
        "vocab = 32000\n[training]\nseq_len = 2048\nmicro_batch = 1\n"
        "global_batch = 2048\n[parallel]\npp = 2048\n[cluster]\n"
        "gpu = \"h100-sxm5-80gb\"\nnodes = 256\n[checkpoint]\n"
        "storage_bandwidth = \"1 TB/s\"\n");
  const std::string p = (root / "p.toml").string();
  for (const char* format : {"table", "json", "html"}) {
    const auto r = run_cli({"plan", p, "--format", format});
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK(r.err.find("p.toml:12:6: parallel.pp (2048): a report lists every stage, at most "
                     "1024") != std::string::npos);
  }
  const auto c = run_cli({"check", p});
  INFO(c.err);
  CHECK((c.code == 0 || c.code == 1));  // a verdict, not a refusal
  CHECK(c.out.find("p.toml") != std::string::npos);
  fs::remove_all(root);
}

TEST_CASE("a config.json flag or length of the wrong type is an error, not the default",
          "[hostile][hf]") {
  const fs::path root = fresh_dir("hf-types");
  const auto plan_with = [&](const std::string& type, const std::string& extra) {
    std::string cfg = k_llama_config;
    cfg.replace(cfg.find("\"llama\""), 7, "\"" + type + "\"");
    cfg.insert(cfg.size() - 1, ", " + extra);
    write(root / "config.json", cfg);
    write(root / "p.toml", std::string("[model]\nhf_config = \"config.json\"\n") + k_plan_rest);
    return run_cli({"plan", (root / "p.toml").string(), "--format", "json"});
  };
  for (const char* bad :
       {"\"sliding_window\": \"4096\"", "\"sliding_window\": -5", "\"sliding_window\": true"}) {
    const auto r = plan_with("mistral", bad);
    INFO(bad << ": " << r.err);
    CHECK(r.code == 2);
    CHECK(r.err.find("sliding_window: expected a whole number of tokens") != std::string::npos);
  }
  for (const char* bad : {"\"attention_bias\": \"abc\"", "\"mlp_bias\": 1"}) {
    const auto r = plan_with("llama", bad);
    INFO(bad << ": " << r.err);
    CHECK(r.code == 2);
    CHECK(r.err.find("expected true or false") != std::string::npos);
  }
  const auto q = plan_with("qwen2", "\"use_sliding_window\": \"yes\"");
  CHECK(q.code == 2);
  // null and absent are the configuration class's default; 4096 is a window.
  CHECK(plan_with("mistral", "\"sliding_window\": null").code == 0);
  const auto w = plan_with("mistral", "\"sliding_window\": 4096");
  REQUIRE(w.code == 0);
  CHECK(w.out.find("\"model.sliding_window\"") != std::string::npos);
  fs::remove_all(root);
}

TEST_CASE("a rejected import is reported alone, not with what it failed to give",
          "[hostile][imports]") {
  const fs::path root = fresh_dir("import-alone");
  write(root / "train.sh", "torchrun pretrain_gpt.py --tensor-model-parallel-size $((5/0))\n");
  write(root / "p.toml",
        "[import]\nmegatron = \"train.sh\"\n[cluster]\ngpu = \"h100-sxm5-80gb\"\n");
  const auto r = run_cli({"plan", (root / "p.toml").string()});
  CHECK(r.code == 2);
  CHECK(r.err.find("division by zero") != std::string::npos);
  CHECK(r.err.find("model: missing") == std::string::npos);
  fs::remove_all(root);
}

TEST_CASE("DeepSpeed: communication_data_type is the reduction's dtype, a bucket is whole",
          "[hostile][imports]") {
  const fs::path root = fresh_dir("ds-types");
  const auto plan_with = [&](const std::string& json) {
    write(root / "ds.json", json);
    write(root / "p.toml", std::string("[model]\npreset = \"llama-3.1-8b\"\n[import]\n"
                                       "deepspeed = \"ds.json\"\n") +
                               k_plan_rest);
    return run_cli({"plan", (root / "p.toml").string(), "--format", "json"});
  };
  const auto fp32 = plan_with(R"({"bf16": {"enabled": true}, "communication_data_type": "fp32"})");
  INFO(fp32.err);
  REQUIRE(fp32.code == 0);
  const auto j = nlohmann::json::parse(fp32.out);
  bool found = false;
  for (const auto& o : j["origins"])
    if (o.contains("key") && o["key"] == "training.reduce_dtype") found = true;
  CHECK((found || fp32.out.find("training.reduce_dtype") != std::string::npos));
  CHECK(fp32.out.find("\"fp32\"") != std::string::npos);
  CHECK(plan_with(R"({"communication_data_type": "fp31"})").code == 2);
  const auto half = plan_with(R"({"zero_optimization": {"reduce_bucket_size": 1.5}})");
  CHECK(half.code == 2);
  CHECK(half.err.find("positive whole number of elements") != std::string::npos);
  fs::remove_all(root);
}
