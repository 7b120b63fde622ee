package io.datcp.scheduler.dashboard;

import static io.datcp.scheduler.dashboard.GrpcJobs.S;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.datcp.proto.v1.QuenchOutcome;
import io.datcp.scheduler.SchedulerServer;
import io.datcp.scheduler.TestServices;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.openqa.selenium.By;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.support.ui.ExpectedConditions;
import org.openqa.selenium.support.ui.Select;
import org.openqa.selenium.support.ui.WebDriverWait;

/**
 * The dashboard's three pages in a real headless Chromium (Debian's chromium and chromium-driver
 * packages), driven by Selenium, over jobs reported through the scheduler's gRPC port as plugins
 * and agents report them. It asserts what the charts were given to draw (uPlot's own data and
 * the data attributes the pages set), not only that pages load. Skipped only when
 * /usr/bin/chromium is absent; screenshots are kept in target/test-artifacts/.
 */
class DashboardBrowserTest {
  private static final Path CHROMIUM = Paths.get("/usr/bin/chromium");
  private static final Path CHROMEDRIVER = Paths.get("/usr/bin/chromedriver");

  /**
   * Finished jobs on node2, 60 s apart: queue, user, seconds before now it finished, completion
   * seconds, and its flows (m = met, x = missed, s = missed and suspended, k = killed).
   */
  private record Done(String id, String queue, String user, long finishedAgo, long completion,
      String flows) {}

  private static final List<Done> DONE = List.of(
      new Done("job_f1", "prod", "alice", 330, 20, "mm"),
      new Done("job_f2", "adhoc", "bob", 270, 45, "ms"),
      new Done("job_f3", "prod", "alice", 210, 30, "mm"),
      new Done("job_f4", "adhoc", "bob", 150, 60, "k"),
      new Done("job_f5", "prod", "bob", 90, 25, "m"),
      new Done("job_f6", "adhoc", "alice", 30, 40, "mx"));

  @TempDir Path dir;
  @TempDir Path profile;
  @RegisterExtension final TestServices.Servers servers = new TestServices.Servers();
  private SchedulerServer server;
  private GrpcJobs grpc;
  private ChromeDriver browser;
  private WebDriverWait wait;

  @BeforeEach
  void start() throws Exception {
    assumeTrue(Files.isExecutable(CHROMIUM), "Chromium is not installed at " + CHROMIUM);
    server = servers.start(dir, Clock.systemUTC(), TestServices.dev());
    grpc = new GrpcJobs(server);
    replayJobs(server.service().nowUnixNanos());
    ChromeOptions options = new ChromeOptions();
    options.setBinary(CHROMIUM.toFile());
    options.addArguments("--headless", "--no-sandbox", "--disable-gpu",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--no-first-run", "--window-size=1400,1100", "--user-data-dir=" + profile);
    ChromeDriverService service = new ChromeDriverService.Builder()
        .usingDriverExecutable(new File(CHROMEDRIVER.toString()))
        .usingAnyFreePort()
        .build();
    browser = new ChromeDriver(service, options);
    wait = new WebDriverWait(browser, Duration.ofSeconds(20));
  }

  @AfterEach
  void stop() {
    if (browser != null) {
      browser.quit();
    }
  }

  /**
   * Six finished jobs on node2 ({@link #DONE}); on node1 job_B (2 maps, done: first), job_C (3
   * maps, done: second) and job_A (2 of 4 maps: waiting), with three flows in flight and three
   * ended (job_B's met after its fetch, job_A's missed and suspended, job_C's killed).
   */
  private void replayJobs(long now) {
    for (Done d : DONE) {
      long finish = now - d.finishedAgo() * S;
      long start = finish - d.completion() * S;
      grpc.start(d.id(), d.queue(), d.user(), "node2", start, 2, 2);
      long flowStart = start + GrpcJobs.MAP_NANOS;
      for (int m = 0; m < d.flows().length(); m++) {
        char f = d.flows().charAt(m);
        grpc.ended(d.id(), m, "m" + m, "node2", flowStart, flowStart + 2 * S,
            f == 'k' ? 0 : flowStart + (f == 'm' ? 3 * S / 2 : 3 * S),
            f == 's' ? QuenchOutcome.QUENCH_OUTCOME_SUSPENDED : f == 'k'
                ? QuenchOutcome.QUENCH_OUTCOME_KILLED : QuenchOutcome.QUENCH_OUTCOME_NONE);
      }
      grpc.finish(d.id(), "node2", finish, true);
    }
    long start = now - 8 * S;
    grpc.start("job_B", "prod", "alice", "node1", start, 2, 2);
    grpc.start("job_C", "prod", "bob", "node1", start, 3, 3);
    grpc.start("job_A", "adhoc", "bob", "node1", start, 4, 2);
    grpc.lookup("job_B", 0, "m0", "node1");
    grpc.lookup("job_B", 1, "m1", "node1");
    grpc.lookup("job_C", 0, "m0", "node1");
    grpc.lookup("job_A", 0, "m0", "node1");
    grpc.fetched("job_B", 0, "m0", "node1", now - S);
    grpc.ended("job_B", 0, "m0", "node1", now - 2 * S, now + S, now - S,
        QuenchOutcome.QUENCH_OUTCOME_NONE);
    grpc.ended("job_A", 1, "m1", "node1", now - 3 * S, now - 2 * S, now - S,
        QuenchOutcome.QUENCH_OUTCOME_SUSPENDED);
    grpc.ended("job_C", 2, "m2", "node1", now - 3 * S, now - S, 0,
        QuenchOutcome.QUENCH_OUTCOME_KILLED);
  }

  private Object js(String script) {
    return ((JavascriptExecutor) browser).executeScript(script);
  }

  private String attr(String css, String name) {
    return browser.findElement(By.cssSelector(css)).getAttribute(name);
  }

  private void waitForAttr(String css, String name, String value) {
    wait.until(ExpectedConditions.attributeToBe(By.cssSelector(css), name, value));
  }

  private void open(String path) {
    browser.get("http://127.0.0.1:" + server.httpPort() + path);
    wait.until(ExpectedConditions.attributeToBeNotEmpty(
        browser.findElement(By.tagName("body")), "data-updated"));
  }

  private void screenshot(String name) throws Exception {
    Path artifacts = Paths.get(System.getProperty("scheduler.artifacts", "target/test-artifacts"));
    Files.createDirectories(artifacts);
    Path shot = Files.write(artifacts.resolve(name),
        browser.getScreenshotAs(OutputType.BYTES));
    assertThat(Files.size(shot)).isGreaterThan(10_000);
  }

  @Test
  void overviewDrawsCompletionTimesTheirCdfAndTheMetRatioAndFilters() throws Exception {
    open("/");
    // uPlot comes from the scheduler's own jar (its WebJar), not from a CDN
    assertThat(js("return typeof uPlot")).isEqualTo("function");
    assertThat(attr("#completion-chart", "data-points")).isEqualTo("6");
    assertThat(attr("#completion-chart", "data-series")).isEqualTo("adhoc,prod");
    assertThat(browser.findElements(By.cssSelector("#completion-chart canvas"))).isNotEmpty();
    // what uPlot was given: per queue the jobs' completion seconds, in finish order
    assertThat(js("return charts['completion-chart'].data[1].filter(v => v !== null)"))
        .isEqualTo(List.of(45L, 60L, 40L));
    assertThat(js("return charts['completion-chart'].data[2].filter(v => v !== null)"))
        .isEqualTo(List.of(20L, 30L, 25L));
    // the CDF steps through 20, 25, 30, 40, 45, 60 s; half the jobs took 30 s or less
    assertThat(attr("#cdf-chart", "data-points")).isEqualTo("6");
    assertThat(attr("#cdf-chart", "data-median")).isEqualTo("30");
    assertThat(js("return charts['cdf-chart'].data[0]"))
        .isEqualTo(List.of(0L, 20L, 25L, 30L, 40L, 45L, 60L));
    // 60 s apart, each job in its own 30 s interval: met / flows of its flows
    assertThat(attr("#met-chart", "data-ratios"))
        .isEqualTo("1.000,0.500,1.000,0.000,1.000,0.500");
    WebElement f4 = browser.findElement(By.cssSelector("#jobs tr[data-job='job_f4']"));
    assertThat(f4.findElement(By.className("met-ratio")).getText()).isEqualTo("0.0 %");
    assertThat(f4.findElement(By.className("completion-time")).getText()).isEqualTo("60.00 s");
    assertThat(browser.findElement(By.id("running-jobs")).getText()).isEqualTo("3");
    screenshot("dashboard-overview.png");

    new Select(browser.findElement(By.id("group-by"))).selectByValue("user");
    waitForAttr("#completion-chart", "data-series", "alice,bob");
    new Select(browser.findElement(By.id("filter-queue"))).selectByValue("prod");
    waitForAttr("#completion-chart", "data-points", "3");
    assertThat(attr("#cdf-chart", "data-median")).isEqualTo("25");
    assertThat(attr("#met-chart", "data-ratios")).isEqualTo("1.000,1.000,1.000");
    new Select(browser.findElement(By.id("filter-user"))).selectByValue("bob");
    waitForAttr("#completion-chart", "data-points", "1");
    assertThat(attr("#completion-chart", "data-series")).isEqualTo("bob");
  }

  @Test
  void jobPageShowsEveryFlowWithItsPolicyOutcomeAndReason() throws Exception {
    open("/dashboard/job.html?id=job_A");
    assertThat(browser.findElement(By.id("job-maps")).getText()).isEqualTo("2/4 done");
    // two maps completed 5 s after the job started: the chart steps from 0 to 2 there and
    // stays at 2 until now
    assertThat(attr("#maps-chart", "data-points")).isEqualTo("2");
    assertThat(js("return charts['maps-chart'].data[1]")).isEqualTo(List.of(0L, 1L, 2L, 2L));
    assertThat(js("const x = charts['maps-chart'].data[0]; return Math.round(x[2] - x[0])"))
        .isEqualTo(5L);
    WebElement reduce = browser.findElement(By.cssSelector("#reduces tr[data-reduce='0']"));
    assertThat(reduce.findElement(By.className("reason")).getText())
        .contains("waiting for 2 maps");
    assertThat(reduce.findElement(By.cssSelector(".progress")).getAttribute("data-progress"))
        .isEqualTo("0.000");
    WebElement flying = browser.findElement(By.cssSelector("#flows tr.in-flight"));
    assertThat(flying.getAttribute("data-importance")).isEqualTo("0");
    assertThat(flying.getAttribute("data-phi")).isEqualTo("1"); // waiting jobs yield (§4.4)
    assertThat(flying.getAttribute("data-mode")).isEqualTo("datcp");
    assertThat(flying.findElement(By.className("class")).getText()).isEqualTo("low (CS1)");
    assertThat(flying.findElement(By.className("reason")).getText())
        .contains("waiting for 2 maps", "phi 1");
    WebElement missed = browser.findElement(By.cssSelector("#flows tr.ended.missed"));
    assertThat(missed.getAttribute("data-quench")).isEqualTo("suspended");
    assertThat(missed.findElement(By.className("outcome")).getText()).isEqualTo(
        "missed its deadline by 1.00 s: took 2.00 s of 1.00 s allowed; suspended by quenching"
            + " (Algorithm 2) on the way");
    screenshot("dashboard-job.png");

    open("/dashboard/job.html?id=job_B");
    List<WebElement> flows = browser.findElements(By.cssSelector("#flows tr.in-flight"));
    assertThat(flows).hasSize(1);
    assertThat(browser.findElement(By.cssSelector("#flows tr.ended.met .outcome")).getText())
        .isEqualTo("met its deadline: took 1.00 s, 2.00 s to spare");
    assertThat(flows.get(0).getAttribute("data-importance")).isEqualTo("10");
    assertThat(flows.get(0).findElement(By.className("class")).getText())
        .isEqualTo("high (AF41)");
    assertThat(flows.get(0).findElement(By.className("reason")).getText())
        .contains("rank 1 of 2", "first in the order");

    open("/dashboard/job.html?id=job_f4");
    assertThat(browser.findElement(By.id("job-state")).getText()).isEqualTo("succeeded");
    assertThat(browser.findElement(By.id("maps-note")).getText())
        .isEqualTo("per-map times are released when a job ends (2 of 2 were done)");
    assertThat(browser.findElement(By.cssSelector("#flows tr.ended .outcome")).getText())
        .isEqualTo("killed by quenching (Algorithm 2): it could not make its deadline");
  }

  @Test
  void hostPageDrawsTheJobOrderAndTheFlowsOnTheDownlinkLive() throws Exception {
    open("/dashboard/host.html?host=node1");
    List<WebElement> order = browser.findElements(By.cssSelector("#order tbody tr"));
    assertThat(order).extracting(r -> r.getAttribute("data-job"))
        .containsExactly("job_B", "job_C", "job_A");
    assertThat(order).extracting(r -> r.findElement(By.className("rank")).getText())
        .containsExactly("1", "2", "waiting for maps");
    assertThat(order).extracting(r -> r.findElement(By.className("class")).getText())
        .containsExactly("high (AF41)", "by urgency: low (CS1) to high (AF41) (P 0.50-10.00)",
            "low (CS1)");
    assertThat(browser.findElements(By.cssSelector("#gantt canvas"))).isNotEmpty();
    assertThat(order).extracting(r -> r.findElement(By.className("progress"))
        .getAttribute("data-progress")).containsExactly("0.500", "0.000", "0.000");
    assertThat(attr("#gantt", "data-rows")).isEqualTo("6");
    assertThat(attr("#gantt", "data-in-flight")).isEqualTo("3");
    assertThat(attr("#gantt", "data-met")).isEqualTo("1");
    assertThat(attr("#gantt", "data-missed")).isEqualTo("2");
    assertThat(attr("#gantt", "data-suspended")).isEqualTo("1");
    assertThat(attr("#gantt", "data-killed")).isEqualTo("1");
    // the marks uPlot was given: one suspended, one killed (the last two series)
    assertThat(js("const d = charts['gantt'].data;"
        + " return [d[d.length - 2], d[d.length - 1]].map(s => s.filter(v => v !== null).length)"))
        .isEqualTo(List.of(1L, 1L));
    screenshot("dashboard-host.png");

    // short polling: a flow looked up now appears without a reload
    grpc.lookup("job_C", 1, "m1", "node1");
    waitForAttr("#gantt", "data-in-flight", "4");
    assertThat(browser.findElement(By.id("hosts")).getText()).isEqualTo("node1");
  }
}
