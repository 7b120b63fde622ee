package io.datcp.scheduler.dashboard;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.datcp.scheduler.SchedulerServer;
import io.datcp.scheduler.SchedulerService;
import io.datcp.scheduler.TestServices;
import io.datcp.scheduler.flows.FlowOutcome;
import io.datcp.scheduler.flows.QuenchOutcome;
import io.datcp.scheduler.jobs.JobEvent;
import io.datcp.scheduler.policy.JobConf;
import io.datcp.scheduler.policy.JobPriority;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.openqa.selenium.By;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.support.ui.ExpectedConditions;
import org.openqa.selenium.support.ui.WebDriverWait;

/**
 * The dashboard in a real headless Chromium (Debian's chromium and chromium-driver packages),
 * driven by Selenium. Skipped only when /usr/bin/chromium is absent; the screenshot is kept in
 * target/test-artifacts/dashboard.png.
 */
class DashboardBrowserTest {
  private static final Path CHROMIUM = Paths.get("/usr/bin/chromium");
  private static final Path CHROMEDRIVER = Paths.get("/usr/bin/chromedriver");
  private static final long S = 1_000_000_000L;
  private static final long MB = 1_000_000L;

  @TempDir Path dir;
  @TempDir Path profile;
  @RegisterExtension final TestServices.Servers servers = new TestServices.Servers();
  private SchedulerServer server;
  private WebDriver browser;

  @BeforeEach
  void start() throws Exception {
    assumeTrue(Files.isExecutable(CHROMIUM), "Chromium is not installed at " + CHROMIUM);
    server = servers.start(dir);
    ChromeOptions options = new ChromeOptions();
    options.setBinary(CHROMIUM.toFile());
    options.addArguments("--headless", "--no-sandbox", "--disable-gpu",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--no-first-run", "--window-size=1400,900", "--user-data-dir=" + profile);
    ChromeDriverService service = new ChromeDriverService.Builder()
        .usingDriverExecutable(new File(CHROMEDRIVER.toString()))
        .usingAnyFreePort()
        .build();
    browser = new ChromeDriver(service, options);
  }

  @AfterEach
  void stop() {
    if (browser != null) {
      browser.quit();
    }
  }

  /** Job B (2 maps) is done; job A (4 maps) still waits for 2 and had one flow miss. */
  private void replayJobs(SchedulerService s) {
    long t0 = s.nowUnixNanos() - 10 * S;
    JobConf conf = new JobConf("default", "alice", "wordcount", JobPriority.NORMAL);
    s.report("node1", List.of(
        new JobEvent.ReduceStarted(t0, "job_A", 0, "node1", 4, 1, conf, 0),
        new JobEvent.MapCompleted(t0, "job_A", 0, 0, "m1", 5 * S, 10 * MB, 2),
        new JobEvent.MapCompleted(t0, "job_A", 0, 1, "m2", 5 * S, 10 * MB, 2),
        new JobEvent.ReduceStarted(t0, "job_B", 0, "node1", 2, 1, conf, 0),
        new JobEvent.MapCompleted(t0, "job_B", 0, 0, "m3", 5 * S, 10 * MB, 0),
        new JobEvent.MapCompleted(t0, "job_B", 0, 1, "m4", 5 * S, 10 * MB, 0),
        new JobEvent.ShuffleFinished(t0 + 2 * S, "job_B", 0),
        new JobEvent.JobFinished(t0 + 3 * S, "job_B", true)));
    s.reportOutcomes("m3", List.of(
        new FlowOutcome("job_B", 0, "m3", "node1", 10 * MB, t0, t0 + 2 * S, t0 + 19 * S / 10,
            true, QuenchOutcome.NONE, null),
        new FlowOutcome("job_B", 0, "m4", "node1", 10 * MB, t0, t0 + 2 * S, t0 + 2 * S - 1,
            true, QuenchOutcome.NONE, null),
        new FlowOutcome("job_A", 0, "m1", "node1", 10 * MB, t0, t0 + 5 * S, t0 + 4 * S,
            true, QuenchOutcome.NONE, null),
        new FlowOutcome("job_A", 0, "m2", "node1", 10 * MB, t0, t0 + 5 * S, t0 + 6 * S,
            false, QuenchOutcome.SUSPENDED, null)));
  }

  @Test
  void showsJobsRatiosAndAFlowTimeline() throws Exception {
    replayJobs(server.service());
    browser.get("http://127.0.0.1:" + server.httpPort() + "/");
    WebDriverWait wait = new WebDriverWait(browser, Duration.ofSeconds(20));

    WebElement jobB = wait.until(ExpectedConditions.presenceOfElementLocated(
        By.cssSelector("#jobs tr[data-job='job_B']")));
    assertThat(browser.findElement(By.id("overall-met-ratio")).getText()).isEqualTo("75.0 %");
    assertThat(browser.findElement(By.id("running-jobs")).getText()).isEqualTo("1");
    assertThat(jobB.findElement(By.className("met-ratio")).getText()).isEqualTo("100.0 %");
    assertThat(jobB.findElement(By.className("completion-time")).getText()).isEqualTo("3.00 s");
    assertThat(jobB.findElement(By.className("shuffle-time")).getText()).isEqualTo("2.00 s");
    WebElement jobA = browser.findElement(By.cssSelector("#jobs tr[data-job='job_A']"));
    assertThat(jobA.findElement(By.className("met-ratio")).getText()).isEqualTo("50.0 %");
    assertThat(jobA.getText()).contains("running", "2/4");

    jobA.click();
    wait.until(ExpectedConditions.numberOfElementsToBe(
        By.cssSelector("#timeline rect.flow"), 2));
    assertThat(browser.findElements(By.cssSelector("#timeline rect.flow.missed"))).hasSize(1);
    assertThat(browser.findElements(By.cssSelector("#timeline line.deadline"))).hasSize(2);
    assertThat(browser.findElement(By.id("reduces")).getText()).contains("waiting for 2 maps");

    Path artifacts = Paths.get(System.getProperty("scheduler.artifacts", "target/test-artifacts"));
    Files.createDirectories(artifacts);
    byte[] png = ((ChromeDriver) browser).getScreenshotAs(OutputType.BYTES);
    Path shot = Files.write(artifacts.resolve("dashboard.png"), png);
    assertThat(Files.size(shot)).isGreaterThan(1000);
  }
}
