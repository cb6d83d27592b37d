// crispd's metrics as Prometheus reads them: the text prometheus-cpp serves.
#include <gtest/gtest.h>
#include <prometheus/text_serializer.h>

#include "agent/metrics/metrics.h"

namespace {

std::string text(const crisp::Metrics& m) { return prometheus::TextSerializer().Serialize(m.collect()); }

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos;
}

TEST(Metrics, SetupTimesAreHistogramsByKindAndPhase) {
  crisp::Metrics m;
  m.setup_phase(crisp::SetupKind::kSpareClaim, "claim", 0.009);
  m.setup_phase(crisp::SetupKind::kSpareClaim, "image", 0.002);
  m.setup_done(crisp::SetupKind::kSpareClaim, 0.030);
  m.setup_done(crisp::SetupKind::kNew, 0.180);
  m.setup_done(crisp::SetupKind::kNew, 0.250);
  std::string t = text(m);
  EXPECT_TRUE(has_line(t, "crisp_setup_seconds_count{kind=\"new\"} 2")) << t;
  EXPECT_TRUE(has_line(t, "crisp_setup_seconds_bucket{kind=\"new\",le=\"0.2\"} 1")) << t;
  EXPECT_TRUE(has_line(t, "crisp_setup_seconds_bucket{kind=\"new\",le=\"0.3\"} 2")) << t;
  EXPECT_TRUE(has_line(t, "crisp_setup_seconds_count{kind=\"spare_claim\"} 1")) << t;
  EXPECT_TRUE(has_line(t, "crisp_setup_phase_seconds_count{kind=\"spare_claim\",phase=\"claim\"} 1")) << t;
  EXPECT_TRUE(has_line(t, "crisp_setup_phase_seconds_bucket{kind=\"spare_claim\",phase=\"claim\",le=\"0.01\"} 1")) << t;
  // Kinds not seen yet are there at 0, so a rate over them is defined.
  EXPECT_TRUE(has_line(t, "crisp_setup_seconds_count{kind=\"named_join\"} 0")) << t;
}

TEST(Metrics, FailuresAreCountedByPhaseAndCancelsApart) {
  crisp::Metrics m;
  std::string before = text(m);
  EXPECT_TRUE(has_line(before, "crisp_setup_failures_total{phase=\"image\"} 0")) << before;
  m.setup_failed("image");
  m.setup_failed("image");
  m.setup_failed("start");
  m.setup_cancelled();
  std::string t = text(m);
  EXPECT_TRUE(has_line(t, "crisp_setup_failures_total{phase=\"image\"} 2")) << t;
  EXPECT_TRUE(has_line(t, "crisp_setup_failures_total{phase=\"start\"} 1")) << t;
  EXPECT_TRUE(has_line(t, "crisp_setup_cancelled_total 1")) << t;
}

TEST(Metrics, PullsRefusalsAndSweeps) {
  crisp::Metrics m;
  m.pull_ended("", 2.0, 5e6);
  m.pull_ended("not_found", 0.05, 0);
  m.refused(crisp::Refusal::kNotRoot);
  m.refused(crisp::Refusal::kBadInput);
  m.refused(crisp::Refusal::kBadInput);
  m.swept("exited", 3);
  m.swept("job_over", 0);
  std::string t = text(m);
  EXPECT_TRUE(has_line(t, "crisp_pull_duration_seconds_count{result=\"ok\"} 1")) << t;
  EXPECT_TRUE(has_line(t, "crisp_pull_duration_seconds_count{result=\"failed\"} 1")) << t;
  EXPECT_TRUE(has_line(t, "crisp_pull_failures_total{reason=\"not_found\"} 1")) << t;
  EXPECT_TRUE(has_line(t, "crisp_pull_bytes_total 5000000")) << t;
  EXPECT_TRUE(has_line(t, "crisp_requests_refused_total{reason=\"not_root\"} 1")) << t;
  EXPECT_TRUE(has_line(t, "crisp_requests_refused_total{reason=\"bad_input\"} 2")) << t;
  EXPECT_TRUE(has_line(t, "crisp_requests_refused_total{reason=\"overloaded\"} 0")) << t;
  EXPECT_TRUE(has_line(t, "crisp_sweep_removals_total{cause=\"exited\"} 3")) << t;
  EXPECT_TRUE(has_line(t, "crisp_sweep_removals_total{cause=\"job_over\"} 0")) << t;
  EXPECT_TRUE(has_line(t, "crisp_sweep_removals_total{cause=\"spare_stray\"} 0")) << t;
}

TEST(Metrics, PresentContainersAndScrapedValuesAreReadAtEachScrape) {
  crisp::Metrics m;
  m.present({{"step", 3}, {"spare", 1}}, 2);
  double rss = 1;
  m.add_scraped("process_resident_memory_bytes", "crispd's", crisp::ScrapedType::kGauge,
                [&] { return std::vector<crisp::ScrapedValue>{{{}, rss}}; });
  m.add_scraped("crisp_spares_total", "spares", crisp::ScrapedType::kCounter, [] {
    return std::vector<crisp::ScrapedValue>{{{{"event", "made"}}, 4}};
  });
  rss = 2.5e7;
  std::string t = text(m);
  EXPECT_TRUE(has_line(t, "crisp_containers{kind=\"step\"} 3")) << t;
  EXPECT_TRUE(has_line(t, "crisp_containers{kind=\"named\"} 0")) << t;
  EXPECT_TRUE(has_line(t, "crisp_containers{kind=\"spare\"} 1")) << t;
  EXPECT_TRUE(has_line(t, "crisp_sandboxes 2")) << t;
  EXPECT_TRUE(has_line(t, "process_resident_memory_bytes 25000000")) << t;
  EXPECT_TRUE(has_line(t, "# TYPE crisp_spares_total counter")) << t;
  EXPECT_TRUE(has_line(t, "crisp_spares_total{event=\"made\"} 4")) << t;
}

}  // namespace
