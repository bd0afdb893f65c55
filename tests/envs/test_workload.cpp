#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "core/csv.hpp"
#include "core/error.hpp"
#include "envs/geodc/workload.hpp"
#include "test_util.hpp"

using namespace marlsched;
using namespace marlsched::geodc;

TEST(PaiTaskTable, LoaderKeepsTerminatedGpuTasks) {
  const auto dir = test::temp_dir("pai");
  const std::string path = dir + "/pai_task_table.csv";
  write_pai_task_table(path, 300, 11);
  // Independent count from the raw rows.
  const auto raw = csv::read(path, false);
  std::size_t expect = 0;
  for (const auto& r : raw.rows) {
    ASSERT_EQ(r.size(), 10u);
    if (r[3] == "Terminated" && !r[8].empty() && std::stod(r[8]) > 0 && !r[5].empty()) ++expect;
  }
  const auto tasks = load_pai_task_table(path);
  EXPECT_EQ(tasks.size(), expect);
  ASSERT_GT(tasks.size(), 50u);
  for (std::size_t i = 1; i < tasks.size(); ++i)
    EXPECT_LE(tasks[i - 1].start_time, tasks[i].start_time);
  for (const auto& t : tasks) {
    EXPECT_GE(t.gpus, 1);
    EXPECT_GT(t.duration_s, 0);
  }
}

TEST(PaiTaskTable, GpuDemandIsCeilOfInstancesTimesPlanGpu) {
  const auto dir = test::temp_dir("pai2");
  const std::string path = dir + "/t.csv";
  std::ofstream(path) << "j1,worker,3,Terminated,100,400,600,29.3,50,V100\n"
                         "j2,ps,1,Terminated,50,60,600,29.3,,MISC\n"
                         "j3,worker,2,Failed,10,20,600,29.3,100,T4\n"
                         "j4,worker,4,Terminated,5,3605,600,29.3,100,T4\n";
  const auto t = load_pai_task_table(path);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].job_name, "j4");  // sorted by start time
  EXPECT_EQ(t[0].gpus, 4);
  EXPECT_DOUBLE_EQ(t[0].duration_s, 3600);
  EXPECT_EQ(t[1].gpus, 2);  // ceil(3 * 50 / 100)
  EXPECT_EQ(job_type_for_gpus(1), kGanFt);
  EXPECT_EQ(job_type_for_gpus(4), kMlmFt);
  EXPECT_EQ(job_type_for_gpus(8), kSdFt);
}

TEST(PaiTaskTable, MalformedRowsAreReportedWithLine) {
  const auto dir = test::temp_dir("pai3");
  const std::string path = dir + "/bad.csv";
  std::ofstream(path) << "j1,worker,3,Terminated,100,400,600,29.3,50,V100\n"
                         "j2,worker,3,Terminated,100\n";
  try {
    load_pai_task_table(path);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.csv:2"), std::string::npos) << e.what();
  }
  std::ofstream(path) << "j1,worker,x,Terminated,100,400,600,29.3,50,V100\n";
  EXPECT_THROW(load_pai_task_table(path), InputError);
  // Values whose arithmetic would overflow (found by fuzz_traces): refused with the line.
  auto message = [&](const std::string& row) {
    std::ofstream(path) << row;
    try {
      load_pai_task_table(path);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(
      message("j,w,3,Terminated,100,400,600,29.3,1.5e87,V100\n").find("bad.csv:1: implausible"),
      std::string::npos);
  EXPECT_NE(message("j,w,3,Terminated,-9e18,9e18,600,29.3,50,V100\n").find("out of range"),
            std::string::npos);
}

TEST(SyntheticJobs, DeadlinesFollowSlackTiers) {
  Rng rng(3);
  const std::vector<double> mix{1, 1, 1}, tiers{1.1, 1.5, 2.0}, probs{1, 1, 1};
  for (int i = 0; i < 2000; ++i) {
    const Job j = draw_job(rng, mix, tiers, probs, 10, 0.25, 8);
    const auto& ts = job_type_spec(j.type);
    ASSERT_GE(j.gpus, ts.gpus_lo);
    ASSERT_LE(j.gpus, ts.gpus_hi);
    // Must complete within ceil(κ · duration) slots of arriving at slot 10.
    const int window = j.deadline - 10 + 1;
    ASSERT_TRUE(window == static_cast<int>(std::ceil(1.1 * j.duration)) ||
                window == static_cast<int>(std::ceil(1.5 * j.duration)) ||
                window == static_cast<int>(std::ceil(2.0 * j.duration)))
        << window << " slots for duration " << j.duration;
    ASSERT_GE(j.duration, 1);
  }
}
