#include "agents/archive_check.hpp"

#include <zip.h>

#include <memory>
#include <vector>

#include "core/error.hpp"

namespace marlsched {

void verify_archive(const std::string& path, const std::string& what) {
  int code = 0;
  // ZIP_CHECKCONS: the central directory must agree with the local headers.
  std::unique_ptr<zip_t, int (*)(zip_t*)> z(
      zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &code), zip_close);
  if (!z) {
    zip_error_t err;
    zip_error_init_with_code(&err, code);
    const std::string text = zip_error_strerror(&err);
    zip_error_fini(&err);
    MARLSCHED_THROW(InputError, "cannot read " << what << " '" << path << "': " << text
                                               << " (the file is damaged, truncated or not a "
                                                  "model archive)");
  }
  const zip_int64_t n = zip_get_num_entries(z.get(), 0);
  std::vector<char> buf(1 << 16);
  for (zip_int64_t i = 0; i < n; ++i) {
    const char* name = zip_get_name(z.get(), static_cast<zip_uint64_t>(i), 0);
    const std::string record = name ? name : "#" + std::to_string(i);
    // libtorch's archive writer (PyTorchStreamWriter: torch::save and TorchScript's save, in
    // C++ and Python) stores tensor records as they are and deflates only its small code and
    // metadata records. A compressed record that inflates past kMaxInflated is a zip bomb or a
    // file of another making: refused from the zip directory, before anything is inflated.
    constexpr zip_uint64_t kMaxInflated = 16u << 20;
    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_stat_index(z.get(), static_cast<zip_uint64_t>(i), 0, &st) == 0 &&
        (st.valid & ZIP_STAT_COMP_METHOD) && st.comp_method != ZIP_CM_STORE &&
        (st.valid & ZIP_STAT_SIZE) && st.size > kMaxInflated)
      MARLSCHED_THROW(InputError,
                      "cannot read "
                          << what << " '" << path << "': its record '" << record << "' inflates to "
                          << st.size << " bytes from "
                          << ((st.valid & ZIP_STAT_COMP_SIZE) ? std::to_string(st.comp_size)
                                                              : std::string("?"))
                          << "; libtorch stores tensors as they are and compresses "
                             "only small code records (at most "
                          << kMaxInflated
                          << " bytes here): a zip bomb, or a file not written by "
                             "marlsched or libtorch");
    std::unique_ptr<zip_file_t, int (*)(zip_file_t*)> f(
        zip_fopen_index(z.get(), static_cast<zip_uint64_t>(i), 0), zip_fclose);
    if (!f)
      MARLSCHED_THROW(InputError, what << " '" << path << "' is damaged: record '" << record
                                       << "' cannot be read ("
                                       << zip_error_strerror(zip_get_error(z.get())) << ")");
    zip_int64_t got = 0;
    // libzip compares the record's CRC-32 when the last byte has been read.
    while ((got = zip_fread(f.get(), buf.data(), buf.size())) > 0) {
    }
    if (got < 0)
      MARLSCHED_THROW(InputError, what << " '" << path << "' is damaged: record '" << record
                                       << "' fails its check ("
                                       << zip_error_strerror(zip_file_get_error(f.get()))
                                       << "); restore it from a copy, or use an older "
                                          "checkpoint of its run");
  }
}

}  // namespace marlsched
