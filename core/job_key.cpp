#include "core/job_key.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <fstream>
#include <mutex>
#include <sstream>

#include "core/config_vars.hpp"
#include "core/log.hpp"

namespace hcomm::core {
namespace {

Expected<std::string> read_secret_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Status{HCOMM_ERR_INVALID_ARG, "HCOMM_JOB_KEY_FILE='" + path +
                                             "' cannot be read: give a readable file "
                                             "holding the job's secret"};
  std::ostringstream text;
  text << in.rdbuf();
  std::string secret = text.str();
  if (!secret.empty() && secret.back() == '\n') secret.pop_back();
  if (!secret.empty() && secret.back() == '\r') secret.pop_back();
  return secret;
}

Expected<std::shared_ptr<const JobKey>> load_from_environment() {
  const auto key = env_text(Var::job_key);
  const auto file = env_text(Var::job_key_file);
  bool require = false;
  if (auto text = env_text(Var::require_auth)) {
    auto flag = parse_flag_var(config_var(Var::require_auth), *text);
    if (!flag.ok()) return flag.status();
    require = flag.value();
  }
  if (key && file)
    return Status{HCOMM_ERR_INVALID_ARG,
                  "both HCOMM_JOB_KEY and HCOMM_JOB_KEY_FILE are set: give the job's secret "
                  "one way"};
  if (!key && !file) {
    if (require)
      return Status{HCOMM_ERR_INVALID_ARG,
                    "HCOMM_REQUIRE_AUTH=1 but no job key is given: set HCOMM_JOB_KEY (or "
                    "HCOMM_JOB_KEY_FILE) to the same secret on every rank; hcomm-run makes one"};
    HCOMM_LOG(warn, log::kInit,
              "this job is unauthenticated: any process that reaches its ports can join it. Set "
              "HCOMM_JOB_KEY (or HCOMM_JOB_KEY_FILE) to the same secret on every rank");
    return std::shared_ptr<const JobKey>();
  }
  std::string secret;
  if (key) {
    secret = *key;
  } else {
    auto read = read_secret_file(*file);
    if (!read.ok()) return read.status();
    secret = std::move(read.value());
  }
  auto made = JobKey::from_secret(std::move(secret));
  if (!made.ok())
    return Status{made.status().code(), std::string(key ? "HCOMM_JOB_KEY" : "HCOMM_JOB_KEY_FILE") +
                                            ": " + made.status().message()};
  return made;
}

}  // namespace

Expected<std::shared_ptr<const JobKey>> JobKey::from_secret(std::string secret) {
  if (secret.size() < kMinSecretBytes)
    return Status{HCOMM_ERR_INVALID_ARG, "the job's secret has " + std::to_string(secret.size()) +
                                             " bytes, fewer than " +
                                             std::to_string(kMinSecretBytes) +
                                             ": use a long random one (`openssl rand -hex 32`)"};
  return std::shared_ptr<const JobKey>(new JobKey(std::move(secret)));
}

Expected<std::shared_ptr<const JobKey>> JobKey::from_environment() {
  static std::once_flag once;
  static Expected<std::shared_ptr<const JobKey>> key{std::shared_ptr<const JobKey>()};
  std::call_once(once, [] { key = load_from_environment(); });
  return key;
}

void JobKey::mac(const void* data, size_t size, Mac out) const {
  unsigned int length = kMacBytes;
  HMAC(EVP_sha256(), secret_.data(), static_cast<int>(secret_.size()),
       static_cast<const unsigned char*>(data), size, out, &length);
}

bool JobKey::same_mac(const uint8_t* a, const uint8_t* b) {
  return CRYPTO_memcmp(a, b, kMacBytes) == 0;
}

Status random_bytes(void* out, size_t size) {
  if (RAND_bytes(static_cast<unsigned char*>(out), static_cast<int>(size)) != 1)
    return Status{HCOMM_ERR_INTERNAL, "the system's random source (OpenSSL RAND_bytes) failed"};
  return {};
}

Expected<std::string> make_job_secret() {
  uint8_t raw[32];
  Status st = random_bytes(raw, sizeof(raw));
  if (!st.ok()) return st;
  static const char kHex[] = "0123456789abcdef";
  std::string hex;
  for (uint8_t b : raw) {
    hex.push_back(kHex[b >> 4]);
    hex.push_back(kHex[b & 15]);
  }
  return hex;
}

}  // namespace hcomm::core
