// TensorBoard framing: CRC-32C against its published check value, TFRecord layout, and the
// hand-encoded Event/Summary bytes against the protobuf wire format.
#include <gtest/gtest.h>

#include <cstring>

#include "io/tensorboard.hpp"

using namespace marlsched;

TEST(TensorBoard, Crc32cCheckValue) {
  EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u);
  EXPECT_EQ(crc32c("", 0), 0u);
}

TEST(TensorBoard, TfRecordFraming) {
  const std::string data = "hello";
  const std::string rec = tfrecord(data);
  ASSERT_EQ(rec.size(), 8 + 4 + data.size() + 4);
  std::uint64_t len = 0;
  std::memcpy(&len, rec.data(), 8);
  EXPECT_EQ(len, data.size());
  std::uint32_t lcrc = 0, dcrc = 0;
  std::memcpy(&lcrc, rec.data() + 8, 4);
  std::memcpy(&dcrc, rec.data() + 12 + data.size(), 4);
  EXPECT_EQ(lcrc, masked_crc32c(rec.data(), 8));
  EXPECT_EQ(dcrc, masked_crc32c(data.data(), data.size()));
  EXPECT_EQ(rec.substr(12, data.size()), data);
}

TEST(TensorBoard, ScalarEventWireFormat) {
  const std::string e = tb_scalars_event(0.0, 300, {{"a", 1.0f}});
  // wall_time (field 1, fixed64) = 0.0; step (field 2, varint) = 300 = 0xAC 0x02;
  // summary (field 5) { value (field 1) { tag "a" (field 1); simple_value 1.0f (field 2) } }.
  const unsigned char want[] = {0x09, 0,    0,    0,    0,    0,    0,    0,
                                0,    0x10, 0xAC, 0x02, 0x2A, 0x0A, 0x0A, 0x08,
                                0x0A, 0x01, 'a',  0x15, 0x00, 0x00, 0x80, 0x3F};
  ASSERT_EQ(e.size(), sizeof want);
  EXPECT_EQ(std::memcmp(e.data(), want, sizeof want), 0);
}

TEST(TensorBoard, SessionStartEventWireFormat) {
  const std::string e = tb_session_start_event(0.0, 5);
  // wall_time; step 5; session_log (field 6) { status (field 1) = START (1) }.
  const unsigned char want[] = {0x09, 0, 0, 0, 0, 0, 0, 0, 0, 0x10, 0x05, 0x32, 0x02, 0x08, 0x01};
  ASSERT_EQ(e.size(), sizeof want);
  EXPECT_EQ(std::memcmp(e.data(), want, sizeof want), 0);
}
